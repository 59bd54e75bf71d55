/**
 * Canonical JSON and deterministic idempotency keys, byte for byte those of the Python SDK
 * (`hitl_sdk.keys`): `sha256(runId + ":" + step + ":" + canonicalJson(args))`, hex.
 *
 * Python writes `json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`
 * of the value it holds; the value the gateway holds is the one this SDK sent, parsed. So a
 * value is first taken as `JSON.stringify` sends it (`toJSON`, undefined members dropped), then:
 * - keys are sorted by Unicode code point, as Python sorts `str` (JS sorts UTF-16 units, which
 *   differs for characters beyond U+FFFF against U+E000..U+FFFF);
 * - an integral number below 1e21 is written as an integer (Python parses it as an `int`);
 *   any other number as Python's `repr(float)` writes it (`1e-05`, `1.5e+21`, `0.1`);
 *   a bigint as its digits (a Python int of any size);
 * - strings are escaped as both languages do (`"`, `\`, and the controls below U+0020 only).
 */
import { createHash } from "node:crypto";

/** A value `canonicalJson` takes: what JSON carries, plus bigint for integers beyond 2**53. */
export type JsonValue = null | boolean | number | bigint | string | JsonValue[] | { [key: string]: JsonValue };

/** UTF-16 unit order fixed up to code point order (surrogates sort after U+E000..U+FFFF). */
function codePointOrder(unit: number): number {
  if (unit >= 0xd800 && unit <= 0xdfff) return unit + 0x2000;
  if (unit >= 0xe000) return unit - 0x800;
  return unit;
}

/** Compare two strings as Python compares `str`: by code point. */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointOrder(x) - codePointOrder(y);
  }
  return a.length - b.length;
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function str(value: string): string {
  // Python cannot encode a lone surrogate as UTF-8 (its key derivation raises): so do we.
  if (LONE_SURROGATE.test(value)) throw new TypeError("canonicalJson: a string holds a lone surrogate");
  return JSON.stringify(value); // the same escapes as Python's with ensure_ascii=False
}

/** A number as the gateway's Python writes it after parsing what `JSON.stringify` sent. */
export function pythonNumber(value: number): string {
  if (!Number.isFinite(value)) throw new TypeError(`canonicalJson: ${value} is not JSON (Python: allow_nan=False)`);
  if (Number.isInteger(value) && Math.abs(value) < 1e21) return Object.is(value, -0) ? "0" : String(value);
  return pythonFloatRepr(value);
}

/** `repr(float)`: the shortest round-trip digits; fixed notation when -4 < exponent < 16. */
export function pythonFloatRepr(value: number): string {
  if (Object.is(value, -0)) return "-0.0";
  const [mantissa = "", exp = "0"] = value.toExponential().split("e"); // shortest round-trip digits
  const sign = mantissa.startsWith("-") ? "-" : "";
  const digits = mantissa.replace("-", "").replace(".", "");
  const decpt = Number(exp) + 1; // value = 0.DIGITS * 10**decpt
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) return `${sign}0.${"0".repeat(-decpt)}${digits}`;
    if (decpt >= digits.length) return `${sign}${digits}${"0".repeat(decpt - digits.length)}.0`;
    return `${sign}${digits.slice(0, decpt)}.${digits.slice(decpt)}`;
  }
  const e = decpt - 1;
  const head = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  return `${sign}${head}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
}

function write(value: unknown, out: string[]): void {
  if (value === null) out.push("null");
  else if (typeof value === "boolean") out.push(value ? "true" : "false");
  else if (typeof value === "number") out.push(pythonNumber(value));
  else if (typeof value === "bigint") out.push(value.toString());
  else if (typeof value === "string") out.push(str(value));
  else if (Array.isArray(value)) {
    out.push("[");
    value.forEach((item, i) => {
      if (i) out.push(",");
      write(item, out);
    });
    out.push("]");
  } else if (typeof value === "object") {
    const obj = value as Record<string, unknown>;
    out.push("{");
    Object.keys(obj)
      .sort(compareCodePoints)
      .forEach((key, i) => {
        if (i) out.push(",");
        out.push(str(key), ":");
        write(obj[key], out);
      });
    out.push("}");
  } else throw new TypeError(`canonicalJson: ${typeof value} is not JSON`);
}

/** The value as `JSON.stringify` would send it: toJSON applied, undefined/functions dropped
 * from objects and null in arrays; bigints kept (JSON.stringify would throw on them). */
function asSent(value: unknown, key = ""): unknown {
  if (value !== null && typeof value === "object" && typeof (value as { toJSON?: unknown }).toJSON === "function") {
    value = (value as { toJSON: (k: string) => unknown }).toJSON(key);
  }
  if (Array.isArray(value)) {
    return value.map((v: unknown, i) => {
      const sent = asSent(v, String(i));
      return sent === undefined ? null : sent;
    });
  }
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const sent = asSent(v, k);
      if (sent !== undefined) out[k] = sent;
    }
    return out;
  }
  if (value === undefined || typeof value === "function" || typeof value === "symbol") return undefined;
  return value;
}

/** Sorted keys, no whitespace, UTF-8 kept: Python's `canonical_json` of the same value. */
export function canonicalJson(value: unknown): string {
  const sent = asSent(value);
  if (sent === undefined) throw new TypeError("canonicalJson: undefined is not JSON");
  const out: string[] = [];
  write(sent, out);
  return out.join("");
}

function sha256(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** sha256(runId:step:canonicalJson(args)), hex: Python's `idempotency_key`. */
export function idempotencyKey(runId: string, step: string, args: unknown): string {
  return sha256(`${runId}:${step}:${canonicalJson(args)}`);
}

/** sha256(canonicalJson(args)), hex: Python's `args_hash` (an approval's `current_args_hash`). */
export function argsHash(args: unknown): string {
  return sha256(canonicalJson(args));
}
