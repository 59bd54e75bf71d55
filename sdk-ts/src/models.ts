/** The records the agent and the gateway share: a decision and a journaled step (as in
 * `hitl_sdk.models`). A decision is journaled in the Python SDK's form (`decided_at` in Unix
 * seconds), so a run started in one language can be resumed by a worker in the other. */
import type { components } from "./openapi.js";

export type Outcome = "approve" | "reject";
/** Where a decision came from (`decided_by` is `rule:NAME` for a rule, `grant:ID` for a grant). */
export type Source = "human" | "operator" | "policy" | "cancel" | "rule" | "grant";
export type StepStatus = "succeeded" | "failed" | "suspended";
export type ApprovalView = components["schemas"]["ApprovalView"];
export type SuspendReply = components["schemas"]["SuspendReply"];
export type SuspendBody = components["schemas"]["SuspendBody"];
export type StepView = components["schemas"]["StepView"];
export type StepBody = components["schemas"]["StepBody"];
export type DecisionBody = components["schemas"]["DecisionBody"];

type Json = Record<string, unknown>;

const str = (v: unknown): string | null => (typeof v === "string" ? v : null);
const obj = (v: unknown): Json | null => (v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Json) : null);

/** An approval's outcome. `args` (when set) are the approved arguments, which may differ from
 * `originalArgs` (what the agent asked for) by `patch` (a JSON Patch). */
export class Decision {
  constructor(
    readonly outcome: Outcome,
    readonly decidedBy: string,
    readonly decidedAt: Date,
    readonly source: Source = "human",
    readonly comment: string | null = null,
    readonly channel: string | null = null,
    readonly reason: string | null = null,
    readonly args: Json | null = null,
    readonly originalArgs: Json | null = null,
    readonly patch: Json[] | null = null,
    readonly person: string | null = null,
    readonly name: string | null = null,
    readonly onBehalfOf: string | null = null,
  ) {}

  get approved(): boolean {
    return this.outcome === "approve";
  }

  /** Who decided, as people should read it. */
  get shownAs(): string {
    return this.person ?? this.name ?? this.decidedBy;
  }

  /** The approved arguments when the approver changed them, else null. */
  get editedArgs(): Json | null {
    if (!this.approved || this.args === null) return null;
    return JSON.stringify(this.args) === JSON.stringify(this.originalArgs) ? null : this.args;
  }

  /** Why it was rejected, in words a model or a person can read (Python's `reason_text`). */
  reasonText(): string {
    const said = this.comment || this.reason;
    const tail = (sep: string) => (said ? `${sep}${said}` : "");
    switch (this.source) {
      case "policy":
        return `No decision within the deadline: ${this.outcome} by policy` + (said ? ` (${said})` : "");
      case "rule":
        return `Decided by the gateway's ${this.decidedBy}` + tail(": ");
      case "grant":
        return `Decided by a standing grant (${this.decidedBy})` + tail(": ");
      case "cancel":
        return `The request was cancelled by ${this.decidedBy}` + tail(": ");
      default:
        return said || `Rejected by ${this.decidedBy}`;
    }
  }

  /** The journal's form (Python's `Decision.to_json`). */
  toJSON(): Json {
    const data: Json = {
      outcome: this.outcome,
      decided_by: this.decidedBy,
      decided_at: this.decidedAt.getTime() / 1000,
      source: this.source,
      comment: this.comment,
      channel: this.channel,
      reason: this.reason,
    };
    if (this.args !== null || this.originalArgs !== null || this.patch !== null) {
      Object.assign(data, { args: this.args, original_args: this.originalArgs, patch: this.patch });
    }
    if (this.person) data.person = this.person;
    if (this.name) data.name = this.name;
    if (this.onBehalfOf !== null) data.on_behalf_of = this.onBehalfOf;
    return data;
  }

  /** From the journal's form (`decided_at` in Unix seconds) or the API's (RFC 3339). */
  static from(d: Json): Decision {
    const at = d.decided_at;
    const decidedAt = typeof at === "number" ? new Date(at * 1000) : new Date(String(at));
    return new Decision(
      d.outcome === "approve" ? "approve" : "reject",
      String(d.decided_by ?? ""),
      decidedAt,
      (str(d.source) ?? "human") as Source,
      str(d.comment),
      str(d.channel),
      str(d.reason),
      obj(d.args),
      obj(d.original_args),
      Array.isArray(d.patch) ? (d.patch as Json[]) : null,
      str(d.person),
      str(d.name),
      str(d.on_behalf_of),
    );
  }
}

/** One journaled step of a run. */
export interface StepRecord {
  runId: string;
  name: string;
  status: StepStatus;
  output: unknown;
  attempts: number;
  startedAt: Date;
  finishedAt: Date;
  error?: string | null;
}

export function stepFromApi(s: StepView): StepRecord {
  return {
    runId: String(s.run_id),
    name: String(s.name),
    status: (s.status ?? "succeeded") as StepStatus,
    output: s.output ?? null,
    attempts: Number(s.attempts ?? 1),
    startedAt: new Date(s.started_at),
    finishedAt: new Date(s.finished_at),
    error: s.error ?? null,
  };
}
