// An invoice agent in TypeScript's runtime: research -> approval -> charge -> email.
//
//   start:  node invoice.mjs start --run-id inv-1 --gateway URL --api-key KEY --payments URL
//           (suspends on the approval and exits 0)
//   resume: the gateway's worker runs `node invoice.mjs resume --payments URL`
//           ([workers.invoice-ts] command; HITL_* environment, the rehydration document on stdin)
//
// Every step is journaled in the gateway; the charge carries run.idempotencyKey("charge", ...),
// so a worker killed at any moment and run again never charges twice. The command line, `note`,
// `charge` (the payment API) and `startOrResume` are ./common.mjs's.
import { commandLine } from "./common.mjs";

const { opts, note, charge, startOrResume } = commandLine({
  channel: { type: "string", default: "web" },
});

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
await startOrResume({
  start: async (run) => console.log(JSON.stringify(await invoiceRun(run))), // suspends at the approval
  resume: invoiceRun, // the same function, once decided: the steps before the approval replay
});
// --8<-- [end:main]
