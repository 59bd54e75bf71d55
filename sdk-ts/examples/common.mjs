// What the examples share: the command line, the effects log the tests read, the fake payment
// API's charge, and the tail that starts a run or resumes it as the gateway's worker.
// Copy it beside an example that imports it.
import { appendFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { DurableRun, Suspended, runWorker } from "@hitl-gateway/sdk";

/** The options of the framework examples: the invoices the model is asked to pay, and a policy
 * timeout for their approvals. */
export const INVOICE_OPTIONS = {
  invoices: { type: "string", default: "INV-1:4200" },
  timeout: { type: "string" }, // a policy timeout for the approvals, e.g. "2s"
};

/** "Pay these invoices: INV-1:4200,INV-2:1500" -> [{ invoice: "INV-1", amount: 4200 }, ...]:
 * what the framework examples' offline models read of the prompt. */
export function invoicesAsked(text) {
  return text.split(": ")[1].split(",").map((item) => {
    const [invoice, amount] = item.split(":");
    return { invoice, amount: Number(amount) };
  });
}

/** Parses `start|resume` and the options every example takes (plus `options`), and gives the
 * helpers that read them: `opts`, `note`, `charge` and `startOrResume({ start, resume })`. */
export function commandLine(options = {}) {
  const { positionals, values: opts } = parseArgs({
    allowPositionals: true,
    options: {
      "run-id": { type: "string" },
      gateway: { type: "string", default: process.env.HITL_GATEWAY_URL },
      "api-key": { type: "string", default: process.env.HITL_API_KEY },
      payments: { type: "string", default: process.env.HITL_PAYMENTS_URL ?? "http://127.0.0.1:8099" },
      effects: { type: "string" }, // append each executed effect here (the tests count them)
      ...options,
    },
  });

  /** Appends a line to the --effects file, if any. */
  const note = (what) => opts.effects && appendFileSync(opts.effects, what + "\n");

  /** POSTs a charge to the payment API, which charges once per Idempotency-Key; `effect` is the
   * line noted for each request. A 5xx is transient: `run.step` retries it. */
  async function charge(runId, { amount }, key, effect = "charge") {
    note(effect);
    const resp = await fetch(`${opts.payments}/charges`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "Idempotency-Key": key },
      body: JSON.stringify({ amount, run_id: runId }),
    });
    if (!resp.ok) throw Object.assign(new Error(`payments: HTTP ${resp.status}`), { transient: resp.status >= 500 });
    return resp.json();
  }

  return { opts, note, charge, startOrResume: (steps) => startOrResume(positionals[0], opts, steps) };
}

// --8<-- [start:main]
/** `node EXAMPLE start ...` opens the run and calls `start(run)`, which exits 0 once the run
 * suspends; `node EXAMPLE resume` (the gateway's worker, after a decision) is `runWorker(resume)`. */
async function startOrResume(command, opts, { start, resume }) {
  if (command === "start") {
    const run = await DurableRun.open({ runId: opts["run-id"], url: opts.gateway, apiKey: opts["api-key"] });
    try {
      await start(run);
    } catch (err) {
      if (!(err instanceof Suspended)) throw err;
      console.log(`${err.message}; waiting costs nothing, exiting`);
    }
  } else {
    await runWorker(resume);
  }
}
// --8<-- [end:main]
