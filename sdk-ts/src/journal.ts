/** Where a DurableRun keeps its journal. `HttpJournal`: the gateway's `/v1/runs/{run_id}/steps`,
 * opened by an API key or by the resume token of one of the run's approvals (what a worker gets). */
import type { GatewayClient } from "./client.js";
import { type StepRecord, stepFromApi } from "./models.js";

export interface Journal {
  /** The run's journaled steps by name. */
  load(runId: string): Promise<Map<string, StepRecord>>;
  /** Journal a step; the first successful record wins and is returned. */
  record(step: StepRecord): Promise<StepRecord>;
}

export class HttpJournal implements Journal {
  constructor(readonly client: GatewayClient) {}

  async load(runId: string): Promise<Map<string, StepRecord>> {
    const steps = await this.client.steps(runId);
    return new Map(steps.map((s) => [String(s.name), stepFromApi(s)]));
  }

  async record(step: StepRecord): Promise<StepRecord> {
    const stored = await this.client.recordStep(step.runId, step.name, {
      status: step.status,
      output: step.output,
      attempts: step.attempts,
      started_at: step.startedAt.toISOString(),
      finished_at: step.finishedAt.toISOString(),
      error: step.error ?? null,
    });
    return stepFromApi(stored);
  }
}
