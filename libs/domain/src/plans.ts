/**
 * Plans, weakest first; a connector or cadence declared for a plan is available on it and every stronger one.
 */
export const PLANS = ['free', 'pro', 'business'] as const;
export type Plan = (typeof PLANS)[number];

export function isPlan(value: unknown): value is Plan {
  return typeof value === 'string' && (PLANS as readonly string[]).includes(value);
}

/**
 * True when an account on `accountPlan` may use what `requiredPlan` unlocks. Unknown plans unlock nothing.
 */
export function planIncludes(accountPlan: string, requiredPlan: string): boolean {
  const have = PLANS.indexOf(accountPlan as Plan);
  const need = PLANS.indexOf(requiredPlan as Plan);
  return have >= 0 && need >= 0 && have >= need;
}
