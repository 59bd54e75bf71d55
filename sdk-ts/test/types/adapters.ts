// Compiled (never run) by `npm run typecheck`: the adapters take the frameworks' own types as a
// TypeScript agent holds them, with no cast.
import { type ModelMessage, generateText, jsonSchema, tool } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { Agent, RunState, run as runAgent } from "@openai/agents";
import { DurableRun, GatewayClient } from "@hitl-gateway/sdk";
import { resumeToolApprovals, suspendToolApprovals } from "@hitl-gateway/sdk/ai";
import { resumeInterruptions, suspendInterruptions } from "@hitl-gateway/sdk/openai-agents";
import { resumeToolCallApprovals, suspendToolCallApprovals } from "@hitl-gateway/sdk/mastra";
import type { Agent as MastraAgent } from "@mastra/core/agent";
import { InMemoryStore } from "@mastra/core/storage";

export async function aiSdk(run: DurableRun): Promise<string> {
  const tools = {
    pay: tool({ inputSchema: jsonSchema<{ amount: number }>({ type: "object" }), needsApproval: true, execute: async () => "ok" }),
  };
  const model = new MockLanguageModelV3();
  const messages: ModelMessage[] = [{ role: "user", content: "pay" }];
  const result = await generateText({ model, tools, messages });
  await suspendToolApprovals(run, { messages, result, worker: "ai-sdk", title: (call) => `Pay ${String(call.input.amount)}` });
  const resumed = await resumeToolApprovals<ModelMessage>(run);
  return (await generateText({ model, tools, messages: resumed })).text;
}

export async function openaiAgents(run: DurableRun, agent: Agent): Promise<unknown> {
  const result = await runAgent(agent, "pay");
  await suspendInterruptions(run, { result, worker: "openai-agents" });
  const state = await resumeInterruptions(run, (saved) => RunState.fromString(agent, saved));
  return (await runAgent(agent, state)).finalOutput;
}

export async function client(): Promise<string> {
  const gateway = new GatewayClient({ url: "http://127.0.0.1:8000", apiKey: "k" });
  const reply = await gateway.suspend({ runId: "r", step: "s", title: "t" });
  const view = await gateway.wait(reply.id, { timeoutMs: 1000 });
  return view.status;
}

export async function mastra(run: DurableRun, agent: MastraAgent): Promise<string> {
  const storage = new InMemoryStore();
  const output = await agent.stream("pay");
  const chunks = [];
  for await (const chunk of output.fullStream) chunks.push(chunk);
  await suspendToolCallApprovals(run, { runId: output.runId, chunks, storage, worker: "mastra" });
  const { runId, calls } = await resumeToolCallApprovals(run, { storage });
  const [call] = calls;
  const resumed = call?.approved
    ? await agent.approveToolCall({ runId, toolCallId: call.toolCallId })
    : await agent.declineToolCall({ runId, toolCallId: call?.toolCallId ?? "" });
  return resumed.text;
}
