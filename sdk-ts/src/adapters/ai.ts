/**
 * The AI SDK (`ai`): a tool with `needsApproval` asks the gateway, and the run resumes in a
 * worker after the decision. No import of `ai`: the adapter reads and writes the plain message
 * objects that `generateText` returns and takes (`ModelMessage`, `tool-approval-request`,
 * `tool-approval-response`), so any `ai` version with tool approvals (5.1 and later) fits.
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
import type { SuspendOptions } from "../client.js";
import type { Decision } from "../models.js";
import { type DurableRun, Suspended } from "../run.js";

type Json = Record<string, unknown>;
/** A `ModelMessage` of the AI SDK, as JSON. */
export type Message = { role: string; content: unknown } & Json;

export interface ToolApprovalRequest {
  type: "tool-approval-request";
  approvalId: string;
  toolCall: { toolCallId: string; toolName: string; input: unknown };
}

export interface ApprovalSettings extends Omit<SuspendOptions, "state"> {
  /** The worker that resumes the run (`[workers.NAME]`). */
  worker: string;
  /** The card's title for a call (default: "Run TOOL"). */
  title?: (call: ToolApprovalRequest["toolCall"]) => string;
}

interface Pending {
  approvalId: string;
  toolCallId: string;
  toolName: string;
  input: Json;
  step: string;
}

interface SavedState {
  framework: "ai";
  messages: Message[];
  pending: Pending[];
  settings: Omit<ApprovalSettings, "title"> & { titles: Record<string, string> };
}

const stepOf = (call: { toolName: string; toolCallId: string }) => `${call.toolName}:${call.toolCallId}`;

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
  const { messages, result, title, ...settings } = options;
  const requests = toolApprovalRequests(result);
  if (requests.length === 0) return;
  const titles: Record<string, string> = {};
  const pending = requests.map((r) => {
    const step = stepOf(r.toolCall);
    titles[step] = title ? title(r.toolCall) : `Run ${r.toolCall.toolName}`;
    return { approvalId: r.approvalId, ...r.toolCall, input: (r.toolCall.input ?? {}) as Json, step };
  });
  const state: SavedState = {
    framework: "ai",
    messages: JSON.parse(JSON.stringify([...messages, ...result.response.messages])) as Message[],
    pending,
    settings: { ...settings, titles },
  };
  await decisions(run, state);
  throw new Error("unreachable: a fresh approval is undecided"); // decisions() threw Suspended
}

/** Every pending call's decision, in order; throws `Suspended` while one is undecided. */
async function decisions(run: DurableRun, state: SavedState): Promise<Decision[]> {
  const { titles, ...suspend } = state.settings;
  const out: Decision[] = [];
  const waiting: Suspended[] = [];
  for (const call of state.pending) {
    try {
      out.push(await run.approval(call.step, { ...suspend, title: titles[call.step] ?? call.step, args: call.input, state }));
    } catch (err) {
      if (!(err instanceof Suspended)) throw err;
      waiting.push(err);
    }
  }
  const [first] = waiting;
  if (first !== undefined) {
    throw new Suspended(first.approvalId, first.resumeToken, waiting.map((s) => s.approvalId));
  }
  return out;
}

/** In the worker: the messages to hand `generateText` to go on: the saved ones, edits applied
 * to the calls' inputs, and a tool message answering every approval request. Throws
 * `Suspended` while another call of the same step is undecided. */
export async function resumeToolApprovals(run: DurableRun): Promise<Message[]> {
  const state = run.document?.state as SavedState | undefined;
  if (state?.framework !== "ai") throw new Error("resumeToolApprovals: the approval's state is not an AI SDK pause");
  const decided = await decisions(run, state);
  const messages = JSON.parse(JSON.stringify(state.messages)) as Message[];
  const answers = state.pending.map((call, i) => {
    const decision = decided[i] as Decision;
    const edited = decision.editedArgs;
    if (edited) replaceInput(messages, call.toolCallId, edited);
    return {
      type: "tool-approval-response",
      approvalId: call.approvalId,
      approved: decision.approved,
      ...(decision.approved ? {} : { reason: decision.reasonText() }),
    };
  });
  return [...messages, { role: "tool", content: answers }];
}

function replaceInput(messages: Message[], toolCallId: string, input: Json): void {
  for (const m of messages) {
    if (m.role !== "assistant" || !Array.isArray(m.content)) continue;
    for (const part of m.content as Json[]) {
      if (part.type === "tool-call" && part.toolCallId === toolCallId) part.input = input;
    }
  }
}
