import { cadenceRequiredPlan, liveExportAllowedCadences, liveExportAvailable } from './availability';

describe('live export plan gating', () => {
  it.each([
    ['free', true, false, []],
    ['pro', true, true, ['manual', 'hourly', 'daily']],
    ['business', true, true, ['manual', 'every_10_minutes', 'every_30_minutes', 'hourly', 'daily']],
    ['business', false, false, []],
    ['enterprise', true, false, []],
  ])(
    'plan %s with subscription %s: available %s, cadences %j',
    (plan, subscriptionActive, available, cadences) => {
      expect(liveExportAvailable({ plan, subscriptionActive })).toBe(available);
      expect(liveExportAllowedCadences({ plan, subscriptionActive })).toEqual(cadences);
    },
  );

  it.each([
    ['manual', 'pro'],
    ['daily', 'pro'],
    ['hourly', 'pro'],
    ['every_30_minutes', 'business'],
    ['every_10_minutes', 'business'],
  ] as const)('%s needs plan %s', (cadence, plan) => {
    expect(cadenceRequiredPlan(cadence)).toBe(plan);
  });
});
