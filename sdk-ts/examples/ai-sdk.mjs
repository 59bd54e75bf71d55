// The AI SDK (`ai`): a tool with `needsApproval` asks the gateway, and a worker resumes the run.
// The model is the AI SDK's own MockLanguageModelV3 (offline): it calls pay_invoice once per
// invoice, then answers "Done. " with every tool result.
//
//   start:  node ai-sdk.mjs start --run-id r-1 --gateway URL --api-key KEY --invoices INV-1:4200
//   worker: [workers.ai-sdk] command = ["node", "ai-sdk.mjs", "resume", "--payments", URL]
import { generateText, jsonSchema, tool } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { resumeToolApprovals, suspendToolApprovals } from "@hitl-gateway/sdk/ai";
import { INVOICE_OPTIONS, commandLine, invoicesAsked } from "./common.mjs";

const { opts, charge, startOrResume } = commandLine(INVOICE_OPTIONS);

const usage = { inputTokens: { total: 1 }, outputTokens: { total: 1 } };
const model = new MockLanguageModelV3({
  doGenerate: async ({ prompt }) => {
    const results = prompt.filter((m) => m.role === "tool").flatMap((m) => m.content);
    if (results.some((p) => p.type === "tool-result")) {
      const said = results.map((r) => (r.output.type === "execution-denied" ? r.output.reason : r.output.value));
      return { content: [{ type: "text", text: `Done. ${said.join(" | ")}` }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] };
    }
    const asked = prompt.find((m) => m.role === "user").content.map((p) => p.text).join("");
    const calls = invoicesAsked(asked).map((args, i) => ({ type: "tool-call", toolCallId: `call-${i + 1}`, toolName: "pay_invoice", input: JSON.stringify(args) }));
    return { content: calls, finishReason: { unified: "tool-calls", raw: "tool_calls" }, usage, warnings: [] };
  },
});

// --8<-- [start:tools]
function tools(run) {
  return {
    pay_invoice: tool({
      description: "Pay an invoice",
      inputSchema: jsonSchema({
        type: "object",
        properties: { invoice: { type: "string" }, amount: { type: "integer" } },
        required: ["invoice", "amount"],
      }),
      needsApproval: true,
      // Runs only in the worker, once approved: a journaled step whose key the payment API de-duplicates.
      execute: async ({ invoice, amount }) => {
        const key = run.idempotencyKey(`charge:${invoice}`, { invoice, amount });
        const receipt = await run.step(`charge:${invoice}`, () => charge(run.runId, { amount }, key, `charge ${invoice} ${amount}`));
        return `charged ${invoice} ${amount} as ${receipt.id}`;
      },
    }),
  };
}
// --8<-- [end:tools]

// --8<-- [start:main]
await startOrResume({
  start: async (run) => {
    const messages = [{ role: "user", content: `Pay these invoices: ${opts.invoices}` }];
    const result = await generateText({ model, tools: tools(run), messages });
    await suspendToolApprovals(run, {
      messages,
      result,
      worker: "ai-sdk",
      title: (call) => `Pay ${call.input.invoice}: ${call.input.amount}`,
      editable: ["amount"],
      ...(opts.timeout ? { policy: { timeout: opts.timeout, on_timeout: "reject" } } : {}),
    });
  },
  resume: async (run) => {
    const messages = await resumeToolApprovals(run); // Suspended while another call is undecided
    const result = await generateText({ model, tools: tools(run), messages });
    return run.step("answer", () => result.text);
  },
});
// --8<-- [end:main]
