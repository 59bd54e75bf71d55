// Prints one JSON line per case of the key table: what this SDK derives, and the args as they
// are sent to the gateway (JSON.stringify; canonicalJson for bigints, which it cannot send).
// tests/typescript/test_keys.py derives Python's key from the same sent args and compares.
import { canonicalJson, idempotencyKey, argsHash } from "../dist/index.js";
import { CASES } from "./key-cases.mjs";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const extra = input.trim() ? JSON.parse(input) : []; // cases written in Python, as JSON
for (const [run, step, args] of [...CASES, ...extra]) {
  const sent = containsBigint(args) ? canonicalJson(args) : JSON.stringify(args);
  console.log(JSON.stringify({ run, step, sent, key: idempotencyKey(run, step, args), hash: argsHash(args), canonical: canonicalJson(args) }));
}

function containsBigint(v) {
  if (typeof v === "bigint") return true;
  if (v && typeof v === "object") return Object.values(v).some(containsBigint);
  return false;
}
