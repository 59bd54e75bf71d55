// The OpenAI Agents SDK for JavaScript: a `needsApproval` tool interrupts the run, the RunState
// is the approval's suspended state, and a worker restores it and runs on after the decision.
// Offline: ScriptedModel (the SDK's `Model` interface; the SDK ships no test model) calls
// pay_invoice once per invoice, then answers "Done. " with every tool result.
//
//   start:  node openai-agents.mjs start --run-id r-1 --gateway URL --api-key KEY --invoices INV-1:4200
//   worker: [workers.openai-agents] command = ["node", "openai-agents.mjs", "resume", "--payments", URL]
import { parseArgs } from "node:util";
import { appendFileSync } from "node:fs";
import { Agent, RunState, Usage, run as runAgent, setTracingDisabled, tool } from "@openai/agents";
import { DurableRun, Suspended, runWorker } from "@hitl-gateway/sdk";
import { resumeInterruptions, suspendInterruptions } from "@hitl-gateway/sdk/openai-agents";

setTracingDisabled(true);
const { positionals, values: opts } = parseArgs({
  allowPositionals: true,
  options: {
    "run-id": { type: "string" },
    gateway: { type: "string", default: process.env.HITL_GATEWAY_URL },
    "api-key": { type: "string", default: process.env.HITL_API_KEY },
    payments: { type: "string", default: process.env.HITL_PAYMENTS_URL ?? "http://127.0.0.1:8099" },
    invoices: { type: "string", default: "INV-1:4200" },
    timeout: { type: "string" }, // a policy timeout for the approvals, e.g. "2s"
    effects: { type: "string" },
  },
});

class ScriptedModel {
  async getResponse({ input }) {
    const items = Array.isArray(input) ? input : [{ role: "user", content: input }];
    const results = items.filter((i) => i.type === "function_call_result");
    if (results.length) {
      const text = `Done. ${results.map((r) => r.output.text).join(" | ")}`;
      const message = { type: "message", id: "msg_1", role: "assistant", status: "completed", content: [{ type: "output_text", text }] };
      return { usage: new Usage(), output: [message] };
    }
    const asked = items.map((i) => (typeof i.content === "string" ? i.content : "")).join(" ");
    const output = asked.split(": ")[1].split(",").map((item) => {
      const [invoice, amount] = item.split(":");
      const args = JSON.stringify({ invoice, amount: Number(amount) });
      return { type: "function_call", id: `fc_${invoice}`, callId: `call_${invoice}`, name: "pay_invoice", status: "completed", arguments: args };
    });
    return { usage: new Usage(), output };
  }
  async *getStreamedResponse() {
    throw new Error("the example does not stream");
  }
}

// --8<-- [start:tools]
function buildAgent(run) {
  const payInvoice = tool({
    name: "pay_invoice",
    description: "Pay an invoice (amount in cents)",
    parameters: {
      type: "object",
      properties: { invoice: { type: "string" }, amount: { type: "integer" } },
      required: ["invoice", "amount"],
      additionalProperties: false,
    },
    strict: true,
    needsApproval: true,
    // Runs only in the worker, once approved: a journaled step whose key the payment API de-duplicates.
    execute: async ({ invoice, amount }) => {
      const key = run.idempotencyKey(`charge:${invoice}`, { invoice, amount });
      const receipt = await run.step(`charge:${invoice}`, async () => {
        if (opts.effects) appendFileSync(opts.effects, `charge ${invoice} ${amount}\n`);
        const resp = await fetch(`${opts.payments}/charges`, {
          method: "POST",
          headers: { "Content-Type": "application/json", "Idempotency-Key": key },
          body: JSON.stringify({ amount, run_id: invoice }),
        });
        return resp.json();
      });
      return `charged ${invoice} ${amount} as ${receipt.id}`;
    },
  });
  return new Agent({ name: "payer", instructions: "Pay what you are asked to.", model: new ScriptedModel(), tools: [payInvoice] });
}
// --8<-- [end:tools]

// --8<-- [start:main]
if (positionals[0] === "start") {
  const run = await DurableRun.open({ runId: opts["run-id"], url: opts.gateway, apiKey: opts["api-key"] });
  const result = await runAgent(buildAgent(run), `Pay these invoices: ${opts.invoices}`);
  try {
    await suspendInterruptions(run, {
      result,
      worker: "openai-agents",
      title: (call) => `Pay ${call.input.invoice}: ${call.input.amount}`,
      editable: ["amount"],
      ...(opts.timeout ? { policy: { timeout: opts.timeout, on_timeout: "reject" } } : {}),
    });
  } catch (err) {
    if (!(err instanceof Suspended)) throw err;
    console.log(`${err.message}; exiting`);
  }
} else {
  await runWorker(async (run) => {
    const agent = buildAgent(run);
    const state = await resumeInterruptions(run, (saved) => RunState.fromString(agent, saved));
    const result = await runAgent(agent, state);
    return run.step("answer", () => result.finalOutput);
  });
}
// --8<-- [end:main]
