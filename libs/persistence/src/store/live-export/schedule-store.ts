/**
 * Live export schedules (`live_export_schedules`): the API writes the cadence, the worker's tick claims due
 * slots by moving `last_slot_at` forward with a compare-and-set.
 */
import { type EntityManager, In } from 'typeorm';
import { LiveExportScheduleEntity } from '../../entities';

/** An enabled, non-manual schedule of a saved export, with its account's plan. */
export interface ScheduleRow {
  live_export_id: string;
  account_id: string;
  cadence: string;
  time_of_day: string | null;
  timezone: string | null;
  enabled: boolean;
  last_slot_at: Date | null;
  updated_at: Date;
  plan_name: string;
  subscription: string;
}

export interface ScheduleWrite {
  cadence: string;
  timeOfDay: string | null;
  timezone: string | null;
  enabled: boolean;
}

// The first write creates the schedule. `last_slot_at` is the worker's and stays as it is.
const UPSERT_SQL = `
  INSERT INTO live_export_schedules (live_export_id, cadence, time_of_day, timezone, enabled)
  VALUES ($1, $2, $3, $4, $5)
  ON CONFLICT (live_export_id) DO UPDATE
     SET cadence = EXCLUDED.cadence, time_of_day = EXCLUDED.time_of_day,
         timezone = EXCLUDED.timezone, enabled = EXCLUDED.enabled, updated_at = now()`;

const ACTIVE_SQL = (byAccount: boolean) => `
  SELECT s.live_export_id, e.account_id, s.cadence, s.time_of_day, s.timezone, s.enabled, s.last_slot_at,
         s.updated_at, a.plan AS plan_name, a.subscription
    FROM live_export_schedules s
    JOIN live_exports e ON e.id = s.live_export_id
    JOIN accounts a ON a.id = e.account_id
   WHERE s.enabled AND s.cadence <> 'manual' AND e.plan IS NOT NULL
         ${byAccount ? 'AND e.account_id = $1' : ''}`;

const CLAIM_SLOT_SQL = `
  UPDATE live_export_schedules SET last_slot_at = $2
   WHERE live_export_id = $1 AND enabled AND (last_slot_at IS NULL OR last_slot_at < $2)
  RETURNING live_export_id`;

export class ScheduleStore {
  /** `db`: the data source's manager, or a transaction's. */
  constructor(private readonly db: EntityManager) {}

  private get schedules() {
    return this.db.getRepository(LiveExportScheduleEntity);
  }

  async find(liveExportId: string): Promise<LiveExportScheduleEntity | null> {
    return this.schedules.findOneBy({ liveExportId });
  }

  async get(liveExportId: string): Promise<LiveExportScheduleEntity> {
    return this.schedules.findOneByOrFail({ liveExportId });
  }

  async findMany(liveExportIds: string[]): Promise<LiveExportScheduleEntity[]> {
    return this.schedules.findBy({ liveExportId: In(liveExportIds) });
  }

  async upsert(liveExportId: string, schedule: ScheduleWrite): Promise<void> {
    const { cadence, timeOfDay, timezone, enabled } = schedule;
    await this.db.query(UPSERT_SQL, [liveExportId, cadence, timeOfDay, timezone, enabled]);
  }

  /** The schedules the tick considers (all accounts, or one). */
  async active(accountId?: string): Promise<ScheduleRow[]> {
    return this.db.query(ACTIVE_SQL(!!accountId), accountId ? [accountId] : []);
  }

  /** Marks `slot` as handled; false when another worker claimed it first. */
  async claimSlot(liveExportId: string, slot: Date): Promise<boolean> {
    const claimed = (await this.db.query(CLAIM_SLOT_SQL, [liveExportId, slot])) as [unknown[], number];
    return claimed[0].length > 0;
  }
}
