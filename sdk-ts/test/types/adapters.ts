// Compiled (never run) by `npm run typecheck`: the adapters take the frameworks' own types as a
// TypeScript agent holds them, with no cast.
import { type ModelMessage, generateText, jsonSchema, tool } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { Agent, RunState, run as runAgent } from "@openai/agents";
import { DurableRun, GatewayClient } from "@hitl-gateway/sdk";
import { resumeToolApprovals, suspendToolApprovals } from "@hitl-gateway/sdk/ai";
import { resumeInterruptions, suspendInterruptions } from "@hitl-gateway/sdk/openai-agents";

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
