// An invoice agent in TypeScript's runtime: research -> approval -> charge -> email.
//
//   start:  node invoice.mjs start --run-id inv-1 --gateway URL --api-key KEY --payments URL
//           (suspends on the approval and exits 0)
//   resume: the gateway's worker runs `node invoice.mjs resume --payments URL`
//           ([workers.invoice-ts] command; HITL_* environment, the rehydration document on stdin)
//
// Every step is journaled in the gateway; the charge carries run.idempotencyKey("charge", ...),
// so a worker killed at any moment and run again never charges twice.
import { appendFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { DurableRun, Suspended, runWorker } from "@hitl-gateway/sdk";

const { positionals, values: opts } = parseArgs({
  allowPositionals: true,
  options: {
    "run-id": { type: "string" },
    gateway: { type: "string", default: process.env.HITL_GATEWAY_URL },
    "api-key": { type: "string", default: process.env.HITL_API_KEY },
    payments: { type: "string", default: process.env.HITL_PAYMENTS_URL ?? "http://127.0.0.1:8099" },
    channel: { type: "string", default: "web" },
    effects: { type: "string" }, // append each executed step function's name here (the tests count them)
  },
});
const note = (what) => opts.effects && appendFileSync(opts.effects, what + "\n");

async function charge(runId, invoice, key) {
  note("charge");
  const resp = await fetch(`${opts.payments}/charges`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "Idempotency-Key": key },
    body: JSON.stringify({ amount: invoice.amount, run_id: runId }),
  });
  if (!resp.ok) throw Object.assign(new Error(`payments: HTTP ${resp.status}`), { transient: resp.status >= 500 });
  return resp.json();
}

// --8<-- [start:agent]
export async function invoiceRun(run) {
  const invoice = await run.step("research", () => {
    note("research");
    return { customer: "ACME", amount: 4200, currency: "EUR" };
  });
  const decision = await run.approval("approval", {
    title: `Charge ${invoice.customer} ${(invoice.amount / 100).toFixed(2)} ${invoice.currency}`,
    args: invoice,
    worker: "invoice-ts",
    channels: [opts.channel],
    editable: ["amount"], // the approver may change the amount
  });
  if (!decision.approved) {
    return run.step("email", () => ({ to: invoice.customer, body: `Not charged: ${decision.reasonText()}` }));
  }
  // What runs is what was approved, and the charge's key is derived from those approved args.
  const approved = decision.editedArgs ?? invoice;
  const key = run.idempotencyKey("charge", approved);
  const receipt = await run.step("charge", () => charge(run.runId, approved, key));
  return run.step("email", () => ({ to: invoice.customer, body: `Charged ${approved.amount} as ${receipt.id}` }));
}
// --8<-- [end:agent]

// --8<-- [start:main]
if (positionals[0] === "start") {
  const run = await DurableRun.open({ runId: opts["run-id"], url: opts.gateway, apiKey: opts["api-key"] });
  try {
    console.log(JSON.stringify(await invoiceRun(run)));
  } catch (err) {
    if (!(err instanceof Suspended)) throw err;
    console.log(`${err.message}; waiting costs nothing, exiting`);
  }
} else {
  await runWorker(invoiceRun);
}
// --8<-- [end:main]
