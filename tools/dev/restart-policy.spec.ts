import { onCrash, RESTART_POLICY, type RestartDecision, type RestartPolicy } from './restart-policy';

/** Feeds crash times one after another, as the supervisor does, and returns every decision. */
function decisions(times: number[], policy: RestartPolicy = RESTART_POLICY): RestartDecision[] {
  let crashes: number[] = [];
  return times.map((now) => {
    const next = onCrash(crashes, now, policy);
    crashes = next.crashes;
    return next.decision;
  });
}

describe('restart policy of the launcher', () => {
  it('doubles the delay with every crash inside the window and gives up at the fifth within 60 s', () => {
    expect(decisions([0, 1_000, 3_000, 6_000, 11_000])).toEqual([
      { action: 'restart', delayMs: 500, crashes: 1 },
      { action: 'restart', delayMs: 1_000, crashes: 2 },
      { action: 'restart', delayMs: 2_000, crashes: 3 },
      { action: 'restart', delayMs: 4_000, crashes: 4 },
      { action: 'give-up', crashes: 5 },
    ]);
  });

  it.each([
    [
      'crashes spread wider than the window',
      [0, 20_000, 40_000, 60_000, 80_000, 100_000],
      [1, 2, 3, 3, 3, 3],
    ],
    ['a quiet minute resets the backoff', [0, 1_000, 2_000, 3_000, 64_000], [1, 2, 3, 4, 1]],
    ['a crash exactly one window after another no longer counts it', [0, 60_000], [1, 1]],
  ])('forgets crashes older than the window: %s', (_, times, counts) => {
    const made = decisions(times);
    expect(made.map((decision) => decision.crashes)).toEqual(counts);
    expect(made.every((decision) => decision.action === 'restart')).toBe(true);
  });

  it('caps the delay at maxDelayMs', () => {
    const policy: RestartPolicy = { windowMs: 60_000, maxCrashes: 10, baseDelayMs: 500, maxDelayMs: 3_000 };
    const delays = decisions([0, 1, 2, 3, 4, 5], policy).map((decision) =>
      decision.action === 'restart' ? decision.delayMs : null,
    );
    expect(delays).toEqual([500, 1_000, 2_000, 3_000, 3_000, 3_000]);
  });

  it('gives up at the first crash when one crash is the limit, and keeps only the crashes inside the window', () => {
    expect(onCrash([], 5, { ...RESTART_POLICY, maxCrashes: 1 }).decision).toEqual({
      action: 'give-up',
      crashes: 1,
    });
    expect(onCrash([1_000, 70_000, 90_000], 100_000).crashes).toEqual([70_000, 90_000, 100_000]);
  });
});
