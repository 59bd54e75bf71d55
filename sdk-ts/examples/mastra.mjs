// Mastra: a tool with `requireApproval` suspends the agent's run; its workflow snapshots are the
// approval's suspended state, and a worker writes them into its own storage and approves or
// declines the call. Offline: the AI SDK 5 MockLanguageModelV2 (Mastra 0.24 takes AI SDK 5
// models) calls payInvoice once per invoice, then answers "Done. " with every tool result.
//
//   start:  node mastra.mjs start --run-id r-1 --gateway URL --api-key KEY --invoices INV-1:4200
//   worker: [workers.mastra] command = ["node", "mastra.mjs", "resume", "--payments", URL]
import { Agent } from "@mastra/core/agent";
import { Mastra } from "@mastra/core/mastra";
import { InMemoryStore } from "@mastra/core/storage";
import { createTool } from "@mastra/core/tools";
import { MockLanguageModelV2 } from "ai-v5/test";
import { z } from "zod";
import { resumeToolCallApprovals, suspendToolCallApprovals } from "@hitl-gateway/sdk/mastra";
import { INVOICE_OPTIONS, commandLine, invoicesAsked } from "./common.mjs";

const { opts, charge, startOrResume } = commandLine(INVOICE_OPTIONS);

const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
const streamOf = (chunks) => ({ stream: new ReadableStream({ start: (c) => (chunks.forEach((x) => c.enqueue(x)), c.close()) }) });
const model = new MockLanguageModelV2({
  doStream: async ({ prompt }) => {
    const results = prompt.filter((m) => m.role === "tool").flatMap((m) => m.content);
    if (results.length) {
      const text = `Done. ${results.map((r) => r.output.value).join(" | ")}`;
      return streamOf([
        { type: "text-start", id: "t" },
        { type: "text-delta", id: "t", delta: text },
        { type: "text-end", id: "t" },
        { type: "finish", finishReason: "stop", usage },
      ]);
    }
    const asked = prompt.filter((m) => m.role === "user").flatMap((m) => m.content).map((p) => p.text).join("");
    const calls = invoicesAsked(asked).map((args, i) => ({ type: "tool-call", toolCallId: `call-${i + 1}`, toolName: "payInvoice", input: JSON.stringify(args) }));
    return streamOf([...calls, { type: "finish", finishReason: "tool-calls", usage }]);
  },
});

// --8<-- [start:tools]
function buildMastra(run, storage) {
  const payInvoice = createTool({
    id: "payInvoice",
    description: "Pay an invoice (amount in cents)",
    inputSchema: z.object({ invoice: z.string(), amount: z.number().int() }),
    requireApproval: true,
    // Runs only in the worker, once approved: a journaled step whose key the payment API de-duplicates.
    execute: async ({ context: { invoice, amount } }) => {
      const key = run.idempotencyKey(`charge:${invoice}`, { invoice, amount });
      const receipt = await run.step(`charge:${invoice}`, () => charge(run.runId, { amount }, key, `charge ${invoice} ${amount}`));
      return `charged ${invoice} ${amount} as ${receipt.id}`;
    },
  });
  const payer = new Agent({ name: "payer", instructions: "Pay what you are asked to.", model, tools: { payInvoice } });
  return new Mastra({ agents: { payer }, storage, logger: false });
}
// --8<-- [end:tools]

async function drain(output) {
  const chunks = [];
  for await (const chunk of output.fullStream) chunks.push(chunk);
  return chunks;
}

// --8<-- [start:main]
await startOrResume({
  start: async (run) => {
    const storage = new InMemoryStore();
    const output = await buildMastra(run, storage).getAgent("payer").stream(`Pay these invoices: ${opts.invoices}`);
    const chunks = await drain(output);
    await suspendToolCallApprovals(run, {
      runId: output.runId,
      chunks,
      storage,
      worker: "mastra",
      title: (call) => `Pay ${call.input.invoice}: ${call.input.amount}`,
      editable: ["amount"],
      ...(opts.timeout ? { policy: { timeout: opts.timeout, on_timeout: "reject" } } : {}),
    });
  },
  resume: async (run) => {
    const storage = new InMemoryStore();
    const agent = buildMastra(run, storage).getAgent("payer");
    const { runId, calls } = await resumeToolCallApprovals(run, { storage }); // Suspended while one is undecided
    let output; // one call at a time: the run suspends again on the next one until the last
    for (const { toolCallId, approved } of calls) {
      output = approved ? await agent.approveToolCall({ runId, toolCallId }) : await agent.declineToolCall({ runId, toolCallId });
      await drain(output);
    }
    const text = await output.text;
    return run.step("answer", () => text);
  },
});
// --8<-- [end:main]
