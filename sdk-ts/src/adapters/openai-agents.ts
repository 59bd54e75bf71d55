/**
 * The OpenAI Agents SDK for JavaScript (`@openai/agents`): a tool with `needsApproval`
 * interrupts the run; each interruption becomes a gateway approval whose state is the
 * serialized `RunState`, and the worker restores it, approves or rejects each call as decided,
 * and runs on. No import of `@openai/agents`: the caller hands its `RunState.fromString`.
 *
 *   start:  const result = await run(agent, input);
 *           await suspendInterruptions(hitl, { result, worker: "openai-agents" }); // throws Suspended
 *   worker: const state = await resumeInterruptions(hitl, (s) => RunState.fromString(agent, s));
 *           const result = await run(agent, state);  // runs the approved calls
 *
 * A rejection's reason is the rejection message the model reads; an edit rewrites the call's
 * arguments in the saved state, so the tool runs with the approved arguments.
 */
import type { Decision } from "../models.js";
import type { DurableRun } from "../run.js";
import { type ApprovalSettings, decisions, type Json, pending, type SavedPause, savedPause } from "./common.js";

export type { ApprovalSettings } from "./common.js";

/** The parts of a `RunToolApprovalItem` the adapter reads. */
interface Interruption {
  name?: string | undefined;
  rawItem: { callId?: string; id?: string; name?: string; arguments?: string };
}

/** The parts of a `RunState` the adapter uses. */
export interface RunStateLike {
  toString(): string;
  getInterruptions(): Interruption[];
  approve(item: never): void;
  reject(item: never, options?: { message?: string }): void;
}

type AgentsPause = SavedPause<"openai-agents", string>;

const callIdOf = (i: Interruption) => String(i.rawItem.callId ?? i.rawItem.id ?? "");

/** After `run(agent, ...)` was interrupted for approvals: one gateway approval per call, the
 * serialized RunState as their state; throws `Suspended`. Returns when nothing interrupted. */
export async function suspendInterruptions(
  run: DurableRun,
  options: ApprovalSettings & { result: { interruptions?: Interruption[]; state: { toString(): string } } },
): Promise<void> {
  const { result, ...settings } = options;
  const interruptions = result.interruptions ?? [];
  if (interruptions.length === 0) return;
  const calls = interruptions.map((i) => ({
    callId: callIdOf(i),
    toolName: String(i.name ?? i.rawItem.name ?? "tool"),
    input: parseArgs(i.rawItem.arguments),
  }));
  const state: AgentsPause = { framework: "openai-agents", saved: result.state.toString(), ...pending(calls, settings) };
  await decisions(run, state); // a fresh approval is undecided: this throws Suspended
}

/** In the worker: the restored RunState with every interrupted call approved (with its edited
 * arguments, if any) or rejected (with the reason as its message). Throws `Suspended` while
 * another call of the same step is undecided. */
export async function resumeInterruptions<S extends RunStateLike>(
  run: DurableRun,
  fromString: (serialized: string) => Promise<S>,
): Promise<S> {
  const pause = savedPause<"openai-agents", string>(run, "openai-agents");
  const decided = await decisions(run, pause);
  const edits = new Map<string, Json>();
  pause.pending.forEach((call, i) => {
    const edited = (decided[i] as Decision).editedArgs;
    if (edited) edits.set(call.callId, edited);
  });
  const state = await fromString(edits.size ? withArguments(pause.saved, edits) : pause.saved);
  const byCall = new Map(pause.pending.map((call, i) => [call.callId, decided[i] as Decision]));
  for (const item of state.getInterruptions()) {
    const decision = byCall.get(callIdOf(item));
    if (decision === undefined) continue; // not ours: left for the caller
    if (decision.approved) state.approve(item as never);
    else state.reject(item as never, { message: decision.reasonText() });
  }
  return state;
}

function parseArgs(text: string | undefined): Json {
  try {
    const value: unknown = JSON.parse(text ?? "{}");
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Json) : { value };
  } catch {
    return { arguments: text ?? "" };
  }
}

/** The serialized state with the function calls' arguments replaced (by call id). */
function withArguments(serialized: string, edits: Map<string, Json>): string {
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v !== null && typeof v === "object") {
      const o = v as Json;
      const edit = o.type === "function_call" && typeof o.callId === "string" ? edits.get(o.callId) : undefined;
      if (edit !== undefined) o.arguments = JSON.stringify(edit);
      Object.values(o).forEach(walk);
    }
  };
  const doc: unknown = JSON.parse(serialized);
  walk(doc);
  return JSON.stringify(doc);
}
