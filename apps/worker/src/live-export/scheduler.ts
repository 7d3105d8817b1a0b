/**
 * The schedule tick (a Bull repeatable job, every 15 s on whichever worker takes it): for every enabled,
 * non-manual schedule of a saved export, the due slot (`dueSlot`: the latest passed slot later than
 * `last_slot_at`, or than the schedule's `updated_at` before its first slot) is claimed by moving
 * `last_slot_at` forward with a compare-and-set, then a `schedule` run is inserted with `slot_at`. Two
 * workers ticking at once cannot both claim a slot, and the unique index on (live_export_id, slot_at) backs
 * that up.
 *
 * A slot that comes while a run is still active is skipped: `last_slot_at` records it as handled and no run
 * is queued for it (the active run already brings the destination up to date; the next slot runs as usual). A
 * slot of a cadence the account's plan no longer allows is skipped the same way.
 */
import type { DataSource } from 'typeorm';
import { newId } from '@lockstep/domain';
import {
  dueSlot,
  isLiveExportCadence,
  liveExportAllowedCadences,
  type LiveExportScheduleSpec,
} from '@lockstep/domain';
import { RunStore, ScheduleStore, type ScheduleRow } from '@lockstep/persistence';

export interface TickResult {
  /** Runs queued: run id and slot. */
  queued: { runId: string; liveExportId: string; slotAt: Date }[];
  /** Slots recorded as handled without a run (a run was active, or the plan no longer allows the cadence). */
  skipped: { liveExportId: string; slotAt: Date; reason: 'run_active' | 'plan' }[];
}

export class LiveExportScheduler {
  constructor(private readonly db: DataSource) {}

  async tick(now: Date, accountId?: string): Promise<TickResult> {
    const result: TickResult = { queued: [], skipped: [] };
    const rows = await new ScheduleStore(this.db.manager).active(accountId);
    for (const row of rows) {
      if (!isLiveExportCadence(row.cadence)) continue;
      const spec: LiveExportScheduleSpec = {
        cadence: row.cadence,
        enabled: row.enabled,
        timeOfDay: row.time_of_day,
        timezone: row.timezone,
      };
      let slot: Date | null;
      try {
        slot = dueSlot(spec, row.last_slot_at ?? row.updated_at, now);
      } catch {
        continue; // an invalid daily time or zone: the API refuses those, so nothing to run
      }
      if (!slot) continue;
      const outcome = await this.claimSlot(row, slot);
      if (outcome === null) continue;
      if (outcome.runId)
        result.queued.push({ runId: outcome.runId, liveExportId: row.live_export_id, slotAt: slot });
      else result.skipped.push({ liveExportId: row.live_export_id, slotAt: slot, reason: outcome.reason! });
    }
    return result;
  }

  /** Claims `slot` for the export and queues its run; null when another worker claimed it first. */
  private async claimSlot(
    row: ScheduleRow,
    slot: Date,
  ): Promise<{ runId?: string; reason?: 'run_active' | 'plan' } | null> {
    return this.db.transaction(async (manager) => {
      if (!(await new ScheduleStore(manager).claimSlot(row.live_export_id, slot))) return null;
      const allowed = liveExportAllowedCadences({
        plan: row.plan_name,
        subscriptionActive: row.subscription === 'active',
      });
      if (!allowed.includes(row.cadence as (typeof allowed)[number])) return { reason: 'plan' as const };
      const runId = newId('run');
      const queued = await new RunStore(manager).queueScheduled(
        runId,
        row.live_export_id,
        row.account_id,
        slot,
      );
      return queued ? { runId } : { reason: 'run_active' as const };
    });
  }
}
