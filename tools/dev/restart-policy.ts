/**
 * When the launcher restarts a crashed process, as pure code: the delay doubles with every crash of that
 * process inside the window (from `baseDelayMs` up to `maxDelayMs`), and the `maxCrashes`-th crash inside the
 * window gives up, since a process that keeps crashing (a bad setting, a store that is gone) needs a person,
 * not a loop. Crashes older than the window are forgotten, so a process that crashes now and then is always
 * restarted.
 */
export interface RestartPolicy {
  windowMs: number;
  maxCrashes: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

/** Five crashes of one process within 60 s stop the launcher; restarts after 0.5, 1, 2 and 4 s. */
export const RESTART_POLICY: RestartPolicy = {
  windowMs: 60_000,
  maxCrashes: 5,
  baseDelayMs: 500,
  maxDelayMs: 8_000,
};

export type RestartDecision =
  { action: 'restart'; delayMs: number; crashes: number } | { action: 'give-up'; crashes: number };

/**
 * The decision for a crash at `now`, given the earlier crash times of the same process; returns the crash
 * times to remember (those inside the window, this one included).
 */
export function onCrash(
  earlier: readonly number[],
  now: number,
  policy: RestartPolicy = RESTART_POLICY,
): { decision: RestartDecision; crashes: number[] } {
  const crashes = [...earlier.filter((at) => at > now - policy.windowMs), now];
  if (crashes.length >= policy.maxCrashes)
    return { decision: { action: 'give-up', crashes: crashes.length }, crashes };
  const delayMs = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (crashes.length - 1));
  return { decision: { action: 'restart', delayMs, crashes: crashes.length }, crashes };
}
