/**
 * The initial sync's progress as the store keeps it (`syncs.initial_sync_progress`): per table pair its stage,
 * cursor, preview and counts, and the run its creates derive their service ids from. Read and written by the
 * preparation (initial-prepare.ts) and the passes (initial-sync.ts).
 */
import type { SideName } from '@lockstep/domain';
import { type Db, saveInitialSyncProgress } from '@lockstep/persistence';
import type { IdScheme } from './service-ids';

export interface PairProgress {
  table_pair: number;
  left_table: string;
  right_table: string;
  stage: 'link' | 'left' | 'right' | 'done';
  cursor: string | null;
  match_field: { left: string; right: string } | null;
  preview: {
    left_records: number;
    right_records: number;
    matched: number;
    to_create_left: number;
    to_create_right: number;
    skipped: number;
    duplicate_keys: number;
  };
  processed: { left: number; right: number };
  created: { left: number; right: number };
  updated: { left: number; right: number };
  failed: number;
  /** The runner working on the pair (see `takeUp`). */
  runner?: string;
  /**
   * Set when another runner had begun the pair (after a crash, a pause or a restart): no pass is skipped
   * then.
   */
  resumed?: boolean;
  /**
   * The side whose pass this runner began while the pair had no record links at all (see `unlinkedPass`): its
   * pages look up no links by remote id.
   */
  unlinked?: SideName;
  /** The pass of this side runs as key ranges any worker takes (see `openRanges`). */
  ranges?: RangedPass;
}

/** A side's pass run as key ranges (`initial_sync_ranges`): the pair's counts are the ranges' sums. */
export interface RangedPass {
  side: SideName;
  /**
   * Decided when the ranges were made, as `unlinkedPass` decides for a whole pass: a range's first taker then
   * looks no links up (ranges are disjoint, so no record of one has a link another range wrote).
   */
  unlinked: boolean;
  /** The pair's counts before the pass: the ranges' sums are added to these. */
  base: { created: Record<SideName, number>; updated: Record<SideName, number>; failed: number };
}

/** Where a step of the initial sync left the run. */
export type InitialStep = 'done' | 'more' | 'waiting';

export interface InitialProgress {
  /** This initial sync's run: the seed of the service ids its creates derive (service-ids.ts). */
  run?: string;
  /**
   * How the run derives them; absent for runs prepared before scheme 2 (they keep scheme 1 when they resume).
   */
  id_scheme?: IdScheme;
  pairs: PairProgress[];
}

export const SIDES: SideName[] = ['left', 'right'];

/**
 * What a run's creates derive their service ids from: its run id and its scheme. Progress without an
 * `id_scheme` means scheme 1, so a page such a run replays after a crash derives the ids it wrote.
 */
export function runIds(progress: InitialProgress): { initialRun?: string; initialIdScheme?: IdScheme } {
  return progress.run ? { initialRun: progress.run, initialIdScheme: progress.id_scheme ?? 1 } : {};
}

export async function saveProgress(db: Db, syncId: string, progress: InitialProgress): Promise<void> {
  await saveInitialSyncProgress(db, syncId, progress);
}
