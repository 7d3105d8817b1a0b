/**
 * Which accounts get live export, and which schedule cadences each plan allows (spec 2.15, 7.2
 * `live_export_unavailable`, `plan_required`).
 *
 * | plan     | live export | cadences                                                        |
 * |----------|-------------|-----------------------------------------------------------------|
 * | free     | no          | none                                                            |
 * | pro      | yes         | `manual`, `daily`, `hourly`                                     |
 * | business | yes         | `manual`, `daily`, `hourly`, `every_30_minutes`, `every_10_minutes` |
 *
 * Live export also needs an active subscription: an account without one gets none of it (like a free plan).
 */
import { type Plan, isPlan } from '../plans';

export const LIVE_EXPORT_CADENCES = [
  'manual',
  'every_10_minutes',
  'every_30_minutes',
  'hourly',
  'daily',
] as const;
export type LiveExportCadence = (typeof LIVE_EXPORT_CADENCES)[number];

export function isLiveExportCadence(value: unknown): value is LiveExportCadence {
  return typeof value === 'string' && (LIVE_EXPORT_CADENCES as readonly string[]).includes(value);
}

/** Cadences per plan, in the order `LIVE_EXPORT_CADENCES` lists them. */
const CADENCES_BY_PLAN: Record<Plan, readonly LiveExportCadence[]> = {
  free: [],
  pro: ['manual', 'hourly', 'daily'],
  business: ['manual', 'every_10_minutes', 'every_30_minutes', 'hourly', 'daily'],
};

export interface LiveExportAccount {
  plan: string;
  /** The account's subscription is active. */
  subscriptionActive: boolean;
}

/** True when the account may use live export at all. */
export function liveExportAvailable(account: LiveExportAccount): boolean {
  return liveExportAllowedCadences(account).length > 0;
}

/** The cadences the account's plan permits (empty when live export is unavailable). */
export function liveExportAllowedCadences(account: LiveExportAccount): LiveExportCadence[] {
  if (!account.subscriptionActive || !isPlan(account.plan)) return [];
  return [...CADENCES_BY_PLAN[account.plan]];
}

/** The weakest plan that permits `cadence`. */
export function cadenceRequiredPlan(cadence: LiveExportCadence): Plan {
  const plan = (Object.keys(CADENCES_BY_PLAN) as Plan[]).find((name) =>
    CADENCES_BY_PLAN[name].includes(cadence),
  );
  if (!plan) throw new Error(`no plan permits cadence ${cadence}`);
  return plan;
}
