/**
 * DurableRun: journaled steps, replay, deterministic idempotency keys, and suspend/resume
 * (Python's `hitl_sdk.DurableRun`).
 *
 *     const run = await DurableRun.open({ runId: "inv-42", url, apiKey }); // or DurableRun.fromEnv()
 *     const data = await run.step("research", () => research(customer)); // journaled; skipped on replay
 *     const decision = await run.approval("approve", { title: "Charge $42", args: { amount: 42 }, worker: "invoice" });
 *     await run.step("charge", () => charge(42, run.idempotencyKey("charge", { amount: 42 })));
 *
 * The journal is written after `fn` returns (effect, then confirmation, then checkpoint): a crash
 * in between runs the step again on replay, with the same idempotency key, so the effect's API
 * can de-duplicate it.
 */
import { GatewayClient, GatewayHTTPError, type SuspendOptions } from "./client.js";
import { HttpJournal, type Journal } from "./journal.js";
import { idempotencyKey } from "./keys.js";
import { Decision, type StepRecord, type StepView, type SuspendReply, stepFromApi } from "./models.js";
import { backoff, sleep } from "./retry.js";

/** The run is waiting for a human: its process should exit 0. The gateway's worker re-runs it. */
export class Suspended extends Error {
  readonly approvalIds: string[];
  constructor(
    readonly approvalId: string,
    readonly resumeToken: string | null = null,
    approvalIds: string[] = [],
  ) {
    const ids = approvalIds.length ? approvalIds : [approvalId];
    super(`suspended on approval${ids.length > 1 ? "s" : ""} ${ids.join(", ")}`);
    this.name = "Suspended";
    this.approvalIds = ids;
  }
}

/** Throw it (or a subclass) from a step to have the step retried with backoff. */
export class TransientError extends Error {
  readonly transient = true;
  override name = "TransientError";
}

/** A step did not finish (retries included) within its timeout. */
export class StepTimeout extends Error {
  override name = "StepTimeout";
}

/** Worth retrying: a `transient === true` error, an HTTP 429/5xx from the gateway, a network
 * error or a timeout inside the step. */
export function isTransient(err: unknown): boolean {
  if (err instanceof GatewayHTTPError) return err.transient;
  if (err !== null && typeof err === "object") {
    const e = err as { transient?: unknown; name?: unknown; cause?: { code?: unknown } };
    if (e.transient === true) return true;
    if (e.name === "TimeoutError") return true;
    if (err instanceof TypeError && e.cause?.code !== undefined) return true; // fetch's network failure
  }
  return false;
}

export interface StepOptions {
  /** The budget of the whole step, retries included, in milliseconds. */
  timeoutMs?: number;
  maxAttempts?: number;
}

export interface ApprovalOptions extends SuspendOptions {
  title: string;
  args?: Record<string, unknown>;
}

export interface RunOptions {
  /** The rehydration document, inside a launched worker. */
  document?: Record<string, unknown> | null;
  maxAttempts?: number;
  /** The first retry's delay, milliseconds (default 500). */
  retryBaseMs?: number;
  codeVersion?: string | null;
  /** The gateway's key for the decided step's effect ($HITL_IDEMPOTENCY_KEY). */
  effectKey?: string | null;
  /** Whether `journal` is the gateway's, where the document's `journal` was read (default: an
   * HttpJournal). A caller's own journal stores its steps elsewhere: it is read instead. */
  launchJournal?: boolean;
}

export interface OpenOptions {
  runId: string;
  url: string;
  apiKey?: string;
  journal?: Journal;
  codeVersion?: string;
}

export interface FromEnvOptions {
  env?: Record<string, string | undefined>;
  document?: Record<string, unknown>;
  journal?: Journal;
}

/** The steps of the document's `journal` (a launch's), if it is this run's; else null (load it). */
function launchJournal(runId: string, document: Record<string, unknown> | null): Map<string, StepRecord> | null {
  const journal = document?.journal;
  if (!Array.isArray(journal) || String(document?.run_id) !== runId) return null;
  return new Map(journal.map((s: StepView) => [String(s.name), stepFromApi(s)]));
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** One agent run with durable steps: a journal in the gateway's store, replay, suspend/resume. */
export class DurableRun {
  readonly codeVersion: string | null;
  readonly document: Record<string, unknown> | null;
  readonly effectKey: string | null;
  readonly maxAttempts: number;
  readonly retryBaseMs: number;
  private cache: Map<string, StepRecord> | null = null;

  constructor(
    readonly runId: string,
    readonly journal: Journal,
    readonly client: GatewayClient | null = null,
    options: RunOptions = {},
  ) {
    // Recorded on every suspend: a worker declaring `accepts` resumes only matching code.
    this.codeVersion = options.codeVersion || process.env.HITL_CODE_VERSION || null;
    this.document = options.document ?? null;
    const docKey = this.document?.idempotency_key;
    this.effectKey = options.effectKey || (typeof docKey === "string" && docKey) || null;
    this.maxAttempts = options.maxAttempts ?? 5;
    this.retryBaseMs = options.retryBaseMs ?? 500;
    // A launched worker's document carries its run's journal as the gateway read it with the
    // approval (one snapshot): the first step needs no GET. `refresh()` still reads it again.
    // Only with the gateway's journal: starting a caller's own journal from the gateway's copy
    // would run again a step that journal already holds.
    const gateways = options.launchJournal ?? journal instanceof HttpJournal;
    this.cache = gateways ? launchJournal(runId, this.document) : null;
  }

  /** A run started by the agent itself; its journal goes over HTTP unless `journal` is given. */
  static async open(options: OpenOptions): Promise<DurableRun> {
    const client = new GatewayClient({ url: options.url, apiKey: options.apiKey });
    return new DurableRun(options.runId, options.journal ?? new HttpJournal(client), client, {
      codeVersion: options.codeVersion ?? null,
    });
  }

  /** Inside a worker: HITL_GATEWAY_URL and HITL_RESUME_TOKEN (HITL_API_KEY, needed only to
   * suspend again; HITL_IDEMPOTENCY_KEY as `effectKey`) from the environment, the rehydration
   * document from stdin (or `document`). The journal goes over HTTP with the resume token; the
   * run starts from the document's `journal` (the steps as the gateway launched it) without
   * reading it, unless `journal` is given: that one is read, being where the steps are. */
  static async fromEnv(options: FromEnvOptions = {}): Promise<DurableRun> {
    const env = options.env ?? process.env;
    const url = env.HITL_GATEWAY_URL;
    const token = env.HITL_RESUME_TOKEN;
    if (!url || !token) throw new Error("DurableRun.fromEnv: HITL_GATEWAY_URL and HITL_RESUME_TOKEN must be set");
    const document = options.document ?? (JSON.parse(await readStdin()) as Record<string, unknown>);
    const client = new GatewayClient({ url, apiKey: env.HITL_API_KEY, resumeToken: token });
    return new DurableRun(String(document.run_id), options.journal ?? new HttpJournal(client), client, {
      document,
      effectKey: env.HITL_IDEMPOTENCY_KEY ?? null,
      launchJournal: options.journal === undefined,
    });
  }

  // ---------------------------------------------------------------- journal
  async steps(): Promise<Map<string, StepRecord>> {
    this.cache ??= await this.journal.load(this.runId);
    return this.cache;
  }

  /** The journal as it is now (other workers of the same run may have written to it since it
   * was read: at the launch, for a worker whose document carried it). */
  async refresh(): Promise<Map<string, StepRecord>> {
    this.cache = await this.journal.load(this.runId);
    return this.cache;
  }

  private async record(record: StepRecord): Promise<StepRecord> {
    const stored = await this.journal.record(record);
    (await this.steps()).set(record.name, stored);
    return stored;
  }

  /** Journal `output` as step `name` unless it already succeeded; return the output that won. */
  async mark<T = unknown>(name: string, output: T): Promise<T> {
    const now = new Date();
    const rec = { runId: this.runId, name, status: "succeeded" as const, output, attempts: 1, startedAt: now, finishedAt: now };
    return (await this.record(rec)).output as T;
  }

  /** Journal the decision of the approval on `step` (once: the first record wins). */
  async recordDecision(step: string, decision: Decision): Promise<Decision> {
    return Decision.from((await this.mark(step, decision.toJSON())) as Record<string, unknown>);
  }

  /** sha256(runId:step:canonicalJson(args)), the Python SDK's key byte for byte: the same on
   * every replay; hand it to the effect. */
  idempotencyKey(step: string, args: unknown): string {
    return idempotencyKey(this.runId, step, args);
  }

  // ---------------------------------------------------------------- steps
  /** Run `fn` once per run: journal its (JSON) output after it returns; on replay return the
   * journaled output without calling it. Transient errors are retried with backoff. */
  async step<T>(name: string, fn: () => T | Promise<T>, options: StepOptions = {}): Promise<T> {
    const done = (await this.steps()).get(name);
    if (done !== undefined && done.status === "succeeded") return done.output as T;
    const started = new Date();
    const limit = options.maxAttempts ?? this.maxAttempts;
    const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
    let attempts = 0;
    let result: T;
    for (;;) {
      attempts++;
      try {
        result = await withDeadline(Promise.resolve().then(fn), deadline, name, attempts, options.timeoutMs);
        break;
      } catch (err) {
        if (err instanceof StepTimeout || !isTransient(err) || attempts >= limit) throw err;
      }
      const wait = backoff(attempts, this.retryBaseMs / 1000, 30) * 1000;
      if (Date.now() + wait > deadline) {
        throw new StepTimeout(`step '${name}' did not finish within ${options.timeoutMs}ms (${attempts} attempts)`);
      }
      await sleep(wait);
    }
    const output = result === undefined ? null : JSON.parse(JSON.stringify(result)); // what replay returns
    const rec = { runId: this.runId, name, status: "succeeded" as const, output, attempts, startedAt: started, finishedAt: new Date() };
    return (await this.record(rec)).output as T;
  }

  /** First execution: suspend (journal + approval) and throw `Suspended`. When the worker
   * re-executes the run, return the `Decision` (approve or reject, by a person or a policy). */
  async approval(step: string, options: ApprovalOptions): Promise<Decision> {
    const journaled = (await this.steps()).get(step);
    if (journaled !== undefined && journaled.status === "succeeded") {
      return Decision.from(journaled.output as Record<string, unknown>);
    }
    const doc = this.document;
    if (doc !== null && doc.step === step && doc.decision) {
      return this.recordDecision(step, Decision.from(doc.decision as Record<string, unknown>));
    }
    // Idempotent: a replay gets the same approval, its status and its resume token.
    const reply = await this.requestApproval(step, options);
    const decision = reply.status === "waiting_approval" ? null : await this.readDecision(reply);
    // A rule decided at once: the named worker's resume job runs it, so this run exits as if
    // it waited (never both); without a worker it goes on now.
    if (decision === null || (decision.source === "rule" && options.worker)) {
      throw new Suspended(reply.id, reply.resume_token);
    }
    return this.recordDecision(step, decision);
  }

  /** The approval's decision as it is now (null: not yet), from its rehydration document, where
   * edited args are the approved ones, raw (the approvals view redacts them). */
  async readDecision(reply: { resume_token: string }): Promise<Decision | null> {
    if (this.client === null) throw new Error("reading a decision needs a GatewayClient");
    const doc = await this.client.rehydrate(reply.resume_token);
    return doc.decision ? Decision.from(doc.decision as Record<string, unknown>) : null;
  }

  /** Suspend on `step` (idempotently: the key is `idempotencyKey(step, args)`) and journal the
   * step as suspended; return the suspend reply. Throws nothing of its own: `approval` does. */
  async requestApproval(step: string, options: ApprovalOptions): Promise<SuspendReply> {
    if (this.client === null) throw new Error("suspending needs a GatewayClient");
    const args = options.args ?? {};
    const started = new Date();
    const reply = await this.client.suspend({
      ...options,
      runId: this.runId,
      step,
      args,
      idempotencyKey: this.idempotencyKey(step, args),
      codeVersion: options.codeVersion ?? this.codeVersion,
    });
    const output = { approval_id: reply.id };
    await this.record({ runId: this.runId, name: step, status: "suspended", output, attempts: 1, startedAt: started, finishedAt: new Date() });
    return reply;
  }
}

async function withDeadline<T>(
  work: Promise<T>,
  deadline: number,
  name: string,
  attempts: number,
  timeoutMs: number | undefined,
): Promise<T> {
  if (deadline === Infinity) return work;
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new StepTimeout(`step '${name}' did not finish within ${timeoutMs}ms (${attempts} attempts)`)),
      Math.max(0, deadline - Date.now()),
    );
  });
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}
