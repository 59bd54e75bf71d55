import assert from "node:assert/strict";
import { test } from "node:test";
import { canonicalJson, idempotencyKey } from "../dist/index.js";
import { compareCodePoints, pythonFloatRepr } from "../dist/keys.js";

test("keys sort by code point, as Python sorts str", () => {
  assert.equal(canonicalJson({ "😀": 1, "\uffff": 2, a: 3 }), '{"a":3,"\uffff":2,"😀":1}');
  assert.ok(compareCodePoints("\u{1F600}", "\uffff") > 0);
});

test("floats are written as Python's repr, integral numbers as ints", () => {
  assert.equal(pythonFloatRepr(1e-5), "1e-05");
  assert.equal(pythonFloatRepr(1.5e16), "1.5e+16");
  assert.equal(pythonFloatRepr(0.5), "0.5");
  assert.equal(canonicalJson([1.0, 2 ** 53, 1e21, -0]), "[1,9007199254740992,1e+21,0]");
});

test("what JSON cannot carry is refused, as Python refuses it", () => {
  assert.throws(() => canonicalJson({ x: NaN }), /not JSON/);
  assert.throws(() => canonicalJson({ x: "\ud800" }), /lone surrogate/);
});

test("a known key (hitl_sdk.keys.idempotency_key('inv-42', 'charge', {'amount': 42}))", () => {
  assert.equal(idempotencyKey("inv-42", "charge", { amount: 42 }), "faf7858892df6bf2a2d6055bde893e01a9f9724d1feb8a51708cddd0fff6e0ac");
  assert.equal(idempotencyKey("inv-42", "charge", { amount: 42 }), idempotencyKey("inv-42", "charge", { amount: 42.0 }));
});
