/**
 * The AI SDK (`ai`): a tool with `needsApproval` asks the gateway, and the run resumes in a
 * worker after the decision. No import of `ai`: the adapter reads and writes the plain message
 * objects that `generateText` returns and takes (`tool-approval-request`,
 * `tool-approval-response`), so any `ai` version with tool approvals fits.
 *
 *   start:  const result = await generateText({ model, tools, messages });
 *           await suspendToolApprovals(run, { messages, result, worker: "ai-sdk" }); // throws Suspended
 *   worker: const messages = await resumeToolApprovals(run);  // throws Suspended while one is undecided
 *           const result = await generateText({ model, tools, messages });  // runs the approved calls
 *
 * One approval per tool call (step `TOOL:TOOL_CALL_ID`, the call's input as args); the messages so
 * far are the approval's state. A rejection reaches the model as the AI SDK's `execution-denied`
 * with the reason; an edit replaces the call's input in the history, so the tool runs with the
 * approved input (the AI SDK has no edit of its own).
 */
import type { Decision } from "../models.js";
import type { DurableRun } from "../run.js";
import { type ApprovalSettings, decisions, type Json, pending, type SavedPause, savedPause } from "./common.js";

export type { ApprovalSettings } from "./common.js";
/** A `ModelMessage` of the AI SDK, as JSON. */
export type Message = { role: string; content: unknown } & Json;

export interface ToolApprovalRequest {
  type: "tool-approval-request";
  approvalId: string;
  toolCall: { toolCallId: string; toolName: string; input: unknown };
}

type AiPause = SavedPause<"ai", Message[]>;

/** The approval requests in a `generateText` result (its `content`). */
export function toolApprovalRequests(result: { content: unknown[] }): ToolApprovalRequest[] {
  return result.content.filter(
    (p): p is ToolApprovalRequest => (p as { type?: unknown }).type === "tool-approval-request",
  );
}

/** After `generateText` paused on tool approvals: one gateway approval per call, the messages
 * (the prompt's and the response's) as their state; throws `Suspended` (the process exits 0).
 * Returns when the result asked for no approval. */
export async function suspendToolApprovals(
  run: DurableRun,
  options: ApprovalSettings & { messages: Message[]; result: { content: unknown[]; response: { messages: unknown[] } } },
): Promise<void> {
  const { messages, result, ...settings } = options;
  const requests = toolApprovalRequests(result);
  if (requests.length === 0) return;
  const calls = requests.map((r) => ({
    callId: r.toolCall.toolCallId,
    toolName: r.toolCall.toolName,
    input: (r.toolCall.input ?? {}) as Json,
    frameworkId: r.approvalId,
  }));
  const saved = JSON.parse(JSON.stringify([...messages, ...result.response.messages])) as Message[];
  const state: AiPause = { framework: "ai", saved, ...pending(calls, settings) };
  await decisions(run, state); // a fresh approval is undecided: this throws Suspended
}

/** In the worker: the messages to hand `generateText` to go on: the saved ones, edits applied
 * to the calls' inputs, and a tool message answering every approval request. Throws
 * `Suspended` while another call of the same step is undecided. `M`: the AI SDK's
 * `ModelMessage`, for a typed result (`resumeToolApprovals<ModelMessage>(run)`). */
export async function resumeToolApprovals<M = Message>(run: DurableRun): Promise<M[]> {
  const state = savedPause<"ai", Message[]>(run, "ai");
  const decided = await decisions(run, state);
  const messages = JSON.parse(JSON.stringify(state.saved)) as Message[];
  const answers = state.pending.map((call, i) => {
    const decision = decided[i] as Decision;
    const edited = decision.editedArgs;
    if (edited) replaceInput(messages, call.callId, edited);
    return {
      type: "tool-approval-response",
      approvalId: call.frameworkId,
      approved: decision.approved,
      ...(decision.approved ? {} : { reason: decision.reasonText() }),
    };
  });
  return [...messages, { role: "tool", content: answers }] as unknown as M[];
}

function replaceInput(messages: Message[], toolCallId: string, input: Json): void {
  for (const m of messages) {
    if (m.role !== "assistant" || !Array.isArray(m.content)) continue;
    for (const part of m.content as Json[]) {
      if (part.type === "tool-call" && part.toolCallId === toolCallId) part.input = input;
    }
  }
}
