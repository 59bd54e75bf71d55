// The OpenAI Agents SDK for JavaScript: a `needsApproval` tool interrupts the run, the RunState
// is the approval's suspended state, and a worker restores it and runs on after the decision.
// Offline: ScriptedModel (the SDK's `Model` interface; the SDK ships no test model) calls
// pay_invoice once per invoice, then answers "Done. " with every tool result.
//
//   start:  node openai-agents.mjs start --run-id r-1 --gateway URL --api-key KEY --invoices INV-1:4200
//   worker: [workers.openai-agents] command = ["node", "openai-agents.mjs", "resume", "--payments", URL]
import { Agent, RunState, Usage, run as runAgent, setTracingDisabled, tool } from "@openai/agents";
import { resumeInterruptions, suspendInterruptions } from "@hitl-gateway/sdk/openai-agents";
import { INVOICE_OPTIONS, commandLine, invoicesAsked } from "./common.mjs";

setTracingDisabled(true);
const { opts, charge, startOrResume } = commandLine(INVOICE_OPTIONS);

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
    const output = invoicesAsked(asked).map(({ invoice, amount }) => {
      const args = JSON.stringify({ invoice, amount });
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
      const receipt = await run.step(`charge:${invoice}`, () => charge(run.runId, { amount }, key, `charge ${invoice} ${amount}`));
      return `charged ${invoice} ${amount} as ${receipt.id}`;
    },
  });
  return new Agent({ name: "payer", instructions: "Pay what you are asked to.", model: new ScriptedModel(), tools: [payInvoice] });
}
// --8<-- [end:tools]

// --8<-- [start:main]
await startOrResume({
  start: async (run) => {
    const result = await runAgent(buildAgent(run), `Pay these invoices: ${opts.invoices}`);
    await suspendInterruptions(run, {
      result,
      worker: "openai-agents",
      title: (call) => `Pay ${call.input.invoice}: ${call.input.amount}`,
      editable: ["amount"],
      ...(opts.timeout ? { policy: { timeout: opts.timeout, on_timeout: "reject" } } : {}),
    });
  },
  resume: async (run) => {
    const agent = buildAgent(run);
    const state = await resumeInterruptions(run, (saved) => RunState.fromString(agent, saved));
    const result = await runAgent(agent, state);
    return run.step("answer", () => result.finalOutput);
  },
});
// --8<-- [end:main]
