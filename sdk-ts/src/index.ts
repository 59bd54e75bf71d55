/**
 * @hitl-gateway/sdk: the agent side of hitl-gateway for TypeScript (Node 20 or later).
 *
 * Durable steps and suspend/resume (`DurableRun`), the HTTP client (`GatewayClient`), the journal
 * over HTTP (`HttpJournal`), the worker entry (`runWorker`), and the Python SDK's idempotency
 * keys byte for byte (`idempotencyKey`, `canonicalJson`). Framework adapters:
 * `@hitl-gateway/sdk/ai` (the AI SDK), `@hitl-gateway/sdk/openai-agents` and
 * `@hitl-gateway/sdk/mastra`.
 */
export {
  type ClientOptions,
  type DecideOptions,
  GatewayClient,
  GatewayHTTPError,
  type SuspendOptions,
  type SuspendParams,
  type WaitOptions,
} from "./client.js";
export { HttpJournal, type Journal } from "./journal.js";
export { argsHash, canonicalJson, idempotencyKey, type JsonValue } from "./keys.js";
export {
  type ApprovalView,
  Decision,
  type Outcome,
  type Source,
  type StepRecord,
  type StepStatus,
  type SuspendReply,
} from "./models.js";
export { backoff } from "./retry.js";
export {
  type ApprovalOptions,
  DurableRun,
  type FromEnvOptions,
  isTransient,
  type OpenOptions,
  type StepOptions,
  StepTimeout,
  Suspended,
  TransientError,
} from "./run.js";
export { EX_TEMPFAIL, runWorker } from "./worker.js";
export type { components, paths } from "./openapi.js";
