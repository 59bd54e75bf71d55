/** GatewayClient: the gateway's HTTP API for agents (suspend, get, wait, decide, rehydrate,
 * journal), over the runtime's own `fetch`. Bodies and replies are the OpenAPI contract's
 * (`src/openapi.d.ts`, generated from the gateway's `/openapi.json`). */
import type { ApprovalView, DecisionBody, StepBody, StepView, SuspendBody, SuspendReply } from "./models.js";
import { backoff, sleep } from "./retry.js";

/** A non-2xx reply. `transient` (429 or 5xx) errors are retried by `DurableRun.step`. */
export class GatewayHTTPError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
  ) {
    super(`HTTP ${status} ${code}: ${detail}`);
    this.name = "GatewayHTTPError";
  }

  get transient(): boolean {
    return this.status === 429 || this.status >= 500;
  }
}

export interface ClientOptions {
  url: string;
  /** Authenticates agent calls (or operator calls, for `decide`). */
  apiKey?: string | undefined;
  /** Inside a worker: opens the rehydration document and the journal of that run only. */
  resumeToken?: string | undefined;
  /** Per request, milliseconds (default 30 000). */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

/** The optional fields of a suspend, as `POST /v1/suspend` names them. `extra`: further fields
 * passed as they are. */
export interface SuspendOptions {
  summary?: string;
  state?: unknown;
  channels?: string[];
  approvers?: string[];
  policy?: string | Record<string, unknown> | null;
  worker?: string | null;
  argsSchema?: Record<string, unknown> | null;
  /** true, or the top-level args an approver may change. */
  editable?: boolean | string[];
  codeVersion?: string | null;
  requestedBy?: string | null;
  /** RFC 3339 with an offset, where the policy lets the agent set the timeout. */
  deadline?: string | null;
  context?: Record<string, unknown> | null;
  extra?: Record<string, unknown> | null;
}

export interface SuspendParams extends SuspendOptions {
  runId: string;
  step: string;
  title: string;
  args?: Record<string, unknown>;
  idempotencyKey?: string;
}

export interface DecideOptions {
  /** Kept as `on_behalf_of`, never as who decided. */
  by?: string;
  comment?: string;
  /** Approve with changes (the approval must allow them, `editable`). */
  args?: Record<string, unknown>;
  /** The `current_args_hash` as read: an approve on args changed since is a 409 `stale_round`. */
  argsHash?: string;
}

export interface WaitOptions {
  /** Give up after this many milliseconds (default: wait for ever). */
  timeoutMs?: number;
  /** First poll interval, doubled up to `maxIntervalMs` (defaults 500 and 15 000). */
  intervalMs?: number;
  maxIntervalMs?: number;
  signal?: AbortSignal;
}

const enc = encodeURIComponent;

export class GatewayClient {
  readonly url: string;
  readonly apiKey: string | undefined;
  readonly resumeToken: string | undefined;
  private readonly timeoutMs: number;
  private readonly fetchImpl: typeof fetch;

  constructor(options: ClientOptions) {
    this.url = options.url.replace(/\/+$/, "");
    this.apiKey = options.apiKey;
    this.resumeToken = options.resumeToken;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.fetchImpl = options.fetch ?? fetch;
  }

  private headers(): Record<string, string> {
    const headers: Record<string, string> = { Accept: "application/json" };
    if (this.apiKey) headers.Authorization = `Bearer ${this.apiKey}`;
    if (this.resumeToken) headers["X-HITL-Resume-Token"] = this.resumeToken;
    return headers;
  }

  /** One call; a non-2xx reply throws `GatewayHTTPError` with the gateway's error code. */
  async request<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
    const headers = this.headers();
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const resp = await this.fetchImpl(this.url + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    const text = await resp.text();
    let data: unknown = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        data = null;
      }
    }
    if (resp.status >= 300) {
      const err = (data as { error?: { code?: string; message?: string } } | null)?.error ?? {};
      throw new GatewayHTTPError(resp.status, err.code ?? "http_error", err.message ?? resp.statusText);
    }
    return data as T;
  }

  /** Create the approval (idempotent by key). Returns id, status, resume_token, deadline. */
  async suspend(params: SuspendParams): Promise<SuspendReply> {
    const body: Record<string, unknown> = {
      run_id: params.runId,
      step: params.step,
      title: params.title,
      summary: params.summary ?? "",
      args: params.args ?? {},
      state: params.state ?? null,
      channels: params.channels ?? ["web"],
    };
    const optional: Record<string, unknown> = {
      approvers: params.approvers ?? [],
      policy: params.policy,
      worker: params.worker,
      code_version: params.codeVersion ?? process.env.HITL_CODE_VERSION,
      idempotency_key: params.idempotencyKey,
      args_schema: params.argsSchema,
      requested_by: params.requestedBy,
      deadline: params.deadline,
      context: params.context,
      editable: params.editable,
    };
    for (const [k, v] of Object.entries(optional)) {
      if (v && !(Array.isArray(v) && v.length === 0)) body[k] = v; // Python sends only the truthy ones
    }
    Object.assign(body, params.extra ?? {});
    return this.request<SuspendReply>("POST", "/v1/suspend", body satisfies Partial<SuspendBody>);
  }

  async get(approvalId: string): Promise<ApprovalView> {
    return this.request<ApprovalView>("GET", `/v1/approvals/${enc(approvalId)}`);
  }

  /** Poll the approval until it is decided (any status but `waiting_approval`), with backoff.
   * The gateway's agent API has no event stream; polling a GET is cheap (an index probe). */
  async wait(approvalId: string, options: WaitOptions = {}): Promise<ApprovalView> {
    const started = Date.now();
    const first = options.intervalMs ?? 500;
    for (let attempt = 1; ; attempt++) {
      options.signal?.throwIfAborted();
      const view = await this.get(approvalId);
      if (view.status !== "waiting_approval") return view;
      let delay = backoff(attempt, first / 1000, (options.maxIntervalMs ?? 15_000) / 1000) * 1000;
      if (options.timeoutMs !== undefined) {
        const left = options.timeoutMs - (Date.now() - started);
        if (left <= 0) throw new Error(`approval ${approvalId} still waiting after ${options.timeoutMs} ms`);
        delay = Math.min(delay, left);
      }
      await sleep(delay, options.signal);
    }
  }

  /** Decide as this client's operator key (an agent key gets 403 operator_required). */
  async decide(approvalId: string, outcome: "approve" | "reject", options: DecideOptions = {}): Promise<unknown> {
    const body: Record<string, unknown> = { outcome };
    if (options.by) body.by = options.by;
    if (options.comment) body.comment = options.comment;
    if (options.args !== undefined) body.args = options.args;
    if (options.argsHash) body.args_hash = options.argsHash;
    return this.request("POST", `/v1/approvals/${enc(approvalId)}/decision`, body as Partial<DecisionBody>);
  }

  /** The rehydration document (raw args and state) for a resume token. */
  async rehydrate(token?: string): Promise<Record<string, unknown>> {
    return this.request("GET", `/v1/resume/${enc(token ?? this.resumeToken ?? "")}`);
  }

  async steps(runId: string): Promise<StepView[]> {
    const data = await this.request<{ items: StepView[] }>("GET", `/v1/runs/${enc(runId)}/steps`);
    return data.items;
  }

  async recordStep(runId: string, name: string, record: Partial<StepBody>): Promise<StepView> {
    return this.request<StepView>("PUT", `/v1/runs/${enc(runId)}/steps/${enc(name)}`, record);
  }
}
