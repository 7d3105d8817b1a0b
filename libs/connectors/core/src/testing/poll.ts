/**
 * Calls `probe` until it returns a value that `done` accepts, or the deadline passes (then throws with the
 * last value seen). The pause between tries is short and only paces the polling; it is never what a test
 * relies on.
 */
export async function pollUntil<T>(
  probe: () => Promise<T>,
  done: (value: T) => boolean,
  options: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline) {
      throw new Error(
        `timed out waiting for ${options.what ?? 'a condition'}; last value: ${JSON.stringify(value)}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 50));
  }
}
