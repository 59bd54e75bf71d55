// The AI SDK (`ai`): a tool with `needsApproval` asks the gateway, and a worker resumes the run.
// The model is the AI SDK's own MockLanguageModelV3 (offline): it calls pay_invoice once per
// invoice, then answers "Done. " with every tool result.
//
//   start:  node ai-sdk.mjs start --run-id r-1 --gateway URL --api-key KEY --invoices INV-1:4200
//   worker: [workers.ai-sdk] command = ["node", "ai-sdk.mjs", "resume", "--payments", URL]
import { parseArgs } from "node:util";
import { appendFileSync } from "node:fs";
import { generateText, jsonSchema, tool } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { DurableRun, Suspended, runWorker } from "@hitl-gateway/sdk";
import { resumeToolApprovals, suspendToolApprovals } from "@hitl-gateway/sdk/ai";

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

const usage = { inputTokens: { total: 1 }, outputTokens: { total: 1 } };
const model = new MockLanguageModelV3({
  doGenerate: async ({ prompt }) => {
    const results = prompt.filter((m) => m.role === "tool").flatMap((m) => m.content);
    if (results.some((p) => p.type === "tool-result")) {
      const said = results.map((r) => (r.output.type === "execution-denied" ? r.output.reason : r.output.value));
      return { content: [{ type: "text", text: `Done. ${said.join(" | ")}` }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] };
    }
    const asked = prompt.find((m) => m.role === "user").content.map((p) => p.text).join("");
    const calls = asked.split(": ")[1].split(",").map((item, i) => {
      const [invoice, amount] = item.split(":");
      const input = JSON.stringify({ invoice, amount: Number(amount) });
      return { type: "tool-call", toolCallId: `call-${i + 1}`, toolName: "pay_invoice", input };
    });
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
    }),
  };
}
// --8<-- [end:tools]

// --8<-- [start:main]
if (positionals[0] === "start") {
  const run = await DurableRun.open({ runId: opts["run-id"], url: opts.gateway, apiKey: opts["api-key"] });
  const messages = [{ role: "user", content: `Pay these invoices: ${opts.invoices}` }];
  const result = await generateText({ model, tools: tools(run), messages });
  try {
    await suspendToolApprovals(run, {
      messages,
      result,
      worker: "ai-sdk",
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
    const messages = await resumeToolApprovals(run); // Suspended while another call is undecided
    const result = await generateText({ model, tools: tools(run), messages });
    return run.step("answer", () => result.text);
  });
}
// --8<-- [end:main]
