import assert from "node:assert/strict";
import { test } from "node:test";
import * as sdk from "../dist/index.js";

test("the package root exports the Python SDK's names, in camelCase", () => {
  for (const name of ["GatewayClient", "GatewayHTTPError", "DurableRun", "HttpJournal", "Decision", "Suspended", "TransientError", "StepTimeout", "isTransient", "idempotencyKey", "canonicalJson", "argsHash", "runWorker"]) {
    assert.ok(name in sdk, name);
  }
  for (const method of ["suspend", "get", "wait", "decide", "rehydrate", "steps", "recordStep"]) {
    assert.equal(typeof sdk.GatewayClient.prototype[method], "function", method);
  }
  for (const method of ["step", "approval", "idempotencyKey", "steps", "refresh"]) {
    assert.equal(typeof sdk.DurableRun.prototype[method], "function", method);
  }
  assert.equal(typeof sdk.DurableRun.open, "function");
  assert.equal(typeof sdk.DurableRun.fromEnv, "function");
});
