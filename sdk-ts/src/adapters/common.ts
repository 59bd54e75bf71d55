/** What the framework adapters share: one gateway approval per paused tool call, whose state
 * is the framework's own saved pause, and the decisions of all of them before a resume. */
import type { SuspendOptions } from "../client.js";
import type { Decision } from "../models.js";
import { type DurableRun, Suspended } from "../run.js";

export type Json = Record<string, unknown>;

export interface ApprovalSettings extends Omit<SuspendOptions, "state"> {
  /** The worker that resumes the run (`[workers.NAME]`). */
  worker: string;
  /** The card's title for a call (default: "Run TOOL"). */
  title?: (call: { toolName: string; input: Json }) => string;
}

/** A paused tool call: its approval is step `TOOL:CALL_ID`, with the call's input as args. */
export interface Pending {
  callId: string;
  toolName: string;
  input: Json;
  step: string;
  /** The framework's own id of the pause, where it has one (the AI SDK's approvalId). */
  frameworkId?: string;
}

/** The approvals' state: the framework's saved pause, the calls, how to suspend them again. */
export interface SavedPause<F extends string, S> {
  framework: F;
  saved: S;
  pending: Pending[];
  settings: Omit<ApprovalSettings, "title"> & { titles: Record<string, string> };
}

export function pending(calls: Omit<Pending, "step">[], settings: ApprovalSettings) {
  const { title, ...rest } = settings;
  const titles: Record<string, string> = {};
  const list = calls.map((c) => {
    const step = `${c.toolName}:${c.callId}`;
    titles[step] = title ? title(c) : `Run ${c.toolName}`;
    return { ...c, step };
  });
  return { pending: list, settings: { ...rest, titles } };
}

/** Every pending call's decision, in order; throws `Suspended` (naming every undecided approval)
 * while one is undecided. The first time, that suspends them all. */
export async function decisions<F extends string, S>(run: DurableRun, state: SavedPause<F, S>): Promise<Decision[]> {
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
  if (first !== undefined) throw new Suspended(first.approvalId, first.resumeToken, waiting.map((s) => s.approvalId));
  return out;
}

/** The saved pause of the approval a worker runs for, checked to be `framework`'s. */
export function savedPause<F extends string, S>(run: DurableRun, framework: F): SavedPause<F, S> {
  const state = run.document?.state as SavedPause<F, S> | undefined;
  if (state?.framework !== framework) throw new Error(`the approval's state is not a ${framework} pause`);
  return state;
}
