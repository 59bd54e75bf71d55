/**
 * The worker entry: the gateway launches `node <script>` for a decided approval (a
 * `[workers.NAME]` with `command = ["node", "script.js"]`), with HITL_GATEWAY_URL,
 * HITL_RESUME_TOKEN, HITL_APPROVAL_ID and HITL_IDEMPOTENCY_KEY in the environment and the
 * rehydration document on stdin. `runWorker` opens the run from them and re-executes it: journaled
 * steps replay, the decided approval returns its decision, the pending step runs.
 *
 * Exit status, as the gateway reads it: 0 done (or suspended again on a later approval),
 * 75 (EX_TEMPFAIL) a transient failure worth a retry, 1 anything else (terminal).
 */
import { DurableRun, type FromEnvOptions, isTransient, Suspended } from "./run.js";

export const EX_TEMPFAIL = 75;

/** Run `main` on the worker's run and exit with the status the gateway expects. */
export async function runWorker(
  main: (run: DurableRun) => Promise<unknown>,
  options: FromEnvOptions & { exit?: (code: number) => void } = {},
): Promise<number> {
  const exit = options.exit ?? ((code: number) => process.exit(code));
  let code = 0;
  try {
    const run = await DurableRun.fromEnv(options);
    const result = await main(run);
    if (result !== undefined) console.log(JSON.stringify(result));
  } catch (err) {
    if (err instanceof Suspended) {
      console.log(err.message); // waiting again: this attempt is done
    } else {
      console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
      code = isTransient(err) ? EX_TEMPFAIL : 1;
    }
  }
  exit(code);
  return code;
}
