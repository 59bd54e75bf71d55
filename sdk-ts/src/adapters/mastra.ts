/**
 * Mastra (`@mastra/core`): a tool with `requireApproval` suspends the agent's run with a
 * `tool-call-approval` chunk. Each becomes a gateway approval whose state is the run's workflow
 * snapshots (read from the Mastra storage the agent ran with); the worker writes them into its
 * own storage and calls `agent.approveToolCall` or `agent.declineToolCall`, as decided. No import
 * of `@mastra/core`: the caller hands its storage and calls the agent.
 *
 *   start:  const out = await agent.stream(input);  // collect out.fullStream's chunks
 *           await suspendToolCallApprovals(hitl, { runId: out.runId, chunks, storage, worker: "mastra" });
 *   worker: const { runId, calls } = await resumeToolCallApprovals(hitl, { storage });
 *           const out = calls[0].approved ? await agent.approveToolCall({ runId, toolCallId })
 *                                         : await agent.declineToolCall({ runId, toolCallId });
 *
 * An edit rewrites the call's arguments in the snapshots, so the tool runs with the approved
 * arguments. Mastra's decline takes no reason: the model reads Mastra's own words.
 */
import type { Decision } from "../models.js";
import type { DurableRun } from "../run.js";
import { type ApprovalSettings, decisions, type Json, pending, type SavedPause, savedPause } from "./common.js";

export type { ApprovalSettings } from "./common.js";

/** The workflows a Mastra agent's run keeps snapshots of while it is suspended. */
export const AGENT_WORKFLOWS = ["agentic-loop", "executionWorkflow"];

/** The parts of a `MastraStorage` the adapter uses. */
export interface SnapshotStorage {
  loadWorkflowSnapshot(args: { workflowName: string; runId: string }): Promise<unknown>;
  persistWorkflowSnapshot(args: { workflowName: string; runId: string; snapshot: never }): Promise<void>;
}

interface Snapshot {
  workflowName: string;
  runId: string;
  snapshot: unknown;
}

interface Saved {
  runId: string;
  snapshots: Snapshot[];
}

/** A call as decided: approve it (`approveToolCall`) or decline it (`declineToolCall`). */
export interface DecidedCall {
  toolCallId: string;
  toolName: string;
  approved: boolean;
  decision: Decision;
}

/** A chunk of the agent's `fullStream`; the `tool-call-approval` ones are read. */
interface ApprovalChunk {
  type: string;
  payload?: unknown;
}

interface ApprovalPayload {
  toolCallId?: string;
  toolName?: string;
  args?: unknown;
}

/** After `agent.stream(...)` suspended on tool approvals (its `tool-call-approval` chunks): one
 * gateway approval per call, the run's snapshots as the state; throws `Suspended`. Returns when
 * no chunk asked for an approval. */
export async function suspendToolCallApprovals(
  run: DurableRun,
  options: ApprovalSettings & { runId: string; chunks: ApprovalChunk[]; storage: SnapshotStorage },
): Promise<void> {
  const { runId, chunks, storage, ...settings } = options;
  const asked = chunks
    .filter((c) => c.type === "tool-call-approval")
    .map((c) => (c.payload ?? {}) as ApprovalPayload)
    .filter((p) => p.toolCallId);
  if (asked.length === 0) return;
  const snapshots: Snapshot[] = [];
  for (const workflowName of AGENT_WORKFLOWS) {
    const snapshot = await storage.loadWorkflowSnapshot({ workflowName, runId });
    if (snapshot) snapshots.push({ workflowName, runId, snapshot: JSON.parse(JSON.stringify(snapshot)) });
  }
  if (snapshots.length === 0) throw new Error(`no workflow snapshot of Mastra run ${runId} in the storage`);
  const calls = asked.map((p) => ({
    callId: String(p.toolCallId),
    toolName: String(p.toolName ?? "tool"),
    input: (p.args ?? {}) as Json,
  }));
  const state: SavedPause<"mastra", Saved> = { framework: "mastra", saved: { runId, snapshots }, ...pending(calls, settings) };
  await decisions(run, state); // a fresh approval is undecided: this throws Suspended
}

/** In the worker: the run's snapshots written into `storage` (edited arguments applied), and
 * each call's decision. Throws `Suspended` while another call of the same step is undecided. */
export async function resumeToolCallApprovals(
  run: DurableRun,
  options: { storage: SnapshotStorage },
): Promise<{ runId: string; calls: DecidedCall[] }> {
  const pause = savedPause<"mastra", Saved>(run, "mastra");
  const decided = await decisions(run, pause);
  const calls = pause.pending.map((call, i) => {
    const decision = decided[i] as Decision;
    return { toolCallId: call.callId, toolName: call.toolName, approved: decision.approved, decision };
  });
  const snapshots = JSON.parse(JSON.stringify(pause.saved.snapshots)) as Snapshot[];
  for (const call of calls) {
    const edited = call.decision.editedArgs;
    if (edited) replaceArgs(snapshots, call.toolCallId, edited);
  }
  for (const s of snapshots) {
    await options.storage.persistWorkflowSnapshot({ workflowName: s.workflowName, runId: s.runId, snapshot: s.snapshot as never });
  }
  return { runId: pause.saved.runId, calls };
}

function replaceArgs(value: unknown, toolCallId: string, args: Json): void {
  if (Array.isArray(value)) value.forEach((v) => replaceArgs(v, toolCallId, args));
  else if (value !== null && typeof value === "object") {
    const o = value as Json;
    if (o.toolCallId === toolCallId) {
      for (const key of ["args", "input"]) if (o[key] !== null && typeof o[key] === "object") o[key] = { ...args };
    }
    Object.values(o).forEach((v) => replaceArgs(v, toolCallId, args));
  }
}
