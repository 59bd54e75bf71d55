import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";
import { DurableRun, GatewayClient, GatewayHTTPError, Suspended, TransientError } from "../dist/index.js";

// A stand-in gateway: records each request, answers from `replies` (by "METHOD path").
const seen = [];
let polls = 0;
const server = createServer(async (req, res) => {
  let body = "";
  for await (const chunk of req) body += chunk;
  seen.push({ method: req.method, url: req.url, headers: req.headers, body: body ? JSON.parse(body) : null });
  const reply = (status, data) => {
    res.writeHead(status, { "Content-Type": "application/json" });
    res.end(JSON.stringify(data));
  };
  if (req.url === "/v1/suspend") return reply(201, { id: "a1", status: "waiting_approval", resume_token: "tok", deadline: null });
  if (req.url === "/v1/approvals/a1") return reply(200, { id: "a1", status: ++polls < 3 ? "waiting_approval" : "approved" });
  if (req.url === "/v1/approvals/nope") return reply(404, { error: { code: "not_found", message: "no approval nope" } });
  if (req.url?.startsWith("/v1/runs/r%2F1/steps/")) return reply(200, { ...seen.at(-1).body, run_id: "r/1", name: "x" });
  if (req.url === "/v1/runs/r%2F1/steps") return reply(200, { items: [] });
  reply(500, { error: { code: "boom", message: "unexpected" } });
});
let url;
before(() => new Promise((ok) => server.listen(0, "127.0.0.1", () => ok((url = `http://127.0.0.1:${server.address().port}`)))));
after(() => server.close());

test("suspend sends the Python SDK's body, with the key and the agent's bearer", async () => {
  const client = new GatewayClient({ url, apiKey: "k" });
  const reply = await client.suspend({ runId: "r", step: "s", title: "t", args: { a: 1 }, idempotencyKey: "key", editable: ["a"] });
  assert.equal(reply.resume_token, "tok");
  const { body, headers } = seen.at(-1);
  assert.equal(headers.authorization, "Bearer k");
  assert.deepEqual(body, { run_id: "r", step: "s", title: "t", summary: "", args: { a: 1 }, state: null, channels: ["web"], idempotency_key: "key", editable: ["a"] });
});

test("a non-2xx reply is a GatewayHTTPError with the gateway's code", async () => {
  const client = new GatewayClient({ url });
  await assert.rejects(client.get("nope"), (err) => err instanceof GatewayHTTPError && err.status === 404 && err.code === "not_found" && !err.transient);
});

test("wait polls until the approval is decided", async () => {
  const view = await new GatewayClient({ url }).wait("a1", { intervalMs: 5, maxIntervalMs: 20 });
  assert.equal(view.status, "approved");
  assert.equal(polls, 3);
});

test("a step runs once, retries a transient error, and journals its JSON output", async () => {
  const run = await DurableRun.open({ runId: "r/1", url, apiKey: "k" });
  let calls = 0;
  const out = await run.step("x", () => {
    if (++calls === 1) throw new TransientError("again");
    return { when: new Date(0) };
  }, { maxAttempts: 3 });
  assert.equal(calls, 2);
  assert.deepEqual(out, { when: "1970-01-01T00:00:00.000Z" });
  assert.equal(seen.at(-1).body.attempts, 2);
  assert.deepEqual(await run.step("x", () => assert.fail("replayed")), out);
});

test("approval suspends with the run's idempotency key", async () => {
  const run = await DurableRun.open({ runId: "r/1", url, apiKey: "k" });
  await assert.rejects(run.approval("pay", { title: "Pay", args: { amount: 1 } }), Suspended);
  const suspend = seen.find((r) => r.url === "/v1/suspend" && r.body.step === "pay");
  assert.equal(suspend.body.idempotency_key, run.idempotencyKey("pay", { amount: 1 }));
});

test("a worker starts from its document's journal: no GET of the steps, refresh() reads them", async () => {
  const journaled = { run_id: "r/1", name: "research", status: "succeeded", output: { rows: 3 }, attempts: 1,
    started_at: "2030-01-01T00:00:00Z", finished_at: "2030-01-01T00:00:01Z", error: null };
  const env = { HITL_GATEWAY_URL: url, HITL_RESUME_TOKEN: "tok" };
  const run = await DurableRun.fromEnv({ env, document: { run_id: "r/1", journal: [journaled] } });
  const before = seen.length;
  assert.deepEqual(await run.step("research", () => assert.fail("replayed from the document")), { rows: 3 });
  await run.step("charge", () => ({ ok: true }));
  assert.deepEqual(seen.slice(before).map((r) => r.method), ["PUT"]);
  assert.equal(seen.at(-1).headers["x-hitl-resume-token"], "tok");
  await run.refresh();
  assert.deepEqual(seen.slice(before).map((r) => r.method), ["PUT", "GET"]);
  // a document of another run, or none: its journal is read
  const other = new DurableRun("r/1", run.journal, run.client, { document: { run_id: "r/2", journal: [journaled] } });
  const count = seen.length;
  await other.steps();
  assert.deepEqual(seen.slice(count).map((r) => r.method), ["GET"]);
});

test("a caller's own journal is read, not the document's: its done steps do not run again", async () => {
  const mine = { runId: "r/own", name: "charge", status: "succeeded", output: { charged: 1 }, attempts: 1,
    startedAt: new Date(), finishedAt: new Date() };
  let loads = 0;
  const journal = {
    load: async () => { loads += 1; return new Map([["charge", mine]]); },
    record: async (rec) => rec,
    close: async () => {},
  };
  const env = { HITL_GATEWAY_URL: url, HITL_RESUME_TOKEN: "tok" };
  const run = await DurableRun.fromEnv({ env, document: { run_id: "r/own", journal: [] }, journal });
  assert.deepEqual(await run.step("charge", () => assert.fail("charged again")), { charged: 1 });
  assert.equal(loads, 1);
});
