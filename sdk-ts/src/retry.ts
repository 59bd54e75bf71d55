/** Retry arithmetic (Python's `hitl_sdk.retry`): exponential backoff with equal jitter. */

/** Seconds to wait before retry number `attempt` (1-based): between half and all of
 * min(cap, base * 2**(attempt-1)). */
export function backoff(attempt: number, base = 1, cap = 300, rand: number = Math.random()): number {
  const ceiling = Math.min(cap, base * 2 ** Math.min(Math.max(0, attempt - 1), 64));
  return ceiling / 2 + (rand * ceiling) / 2;
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}
