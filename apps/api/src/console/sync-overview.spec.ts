import type { SyncDto, SyncStatusDto } from '@lockstep/contracts';
import { duration, needsYou, PaceSamples } from './sync-overview';

const START = '2026-01-01T12:00:00.000Z';

/** A running initial sync of one pair: 1,000 left + 1,000 right records, `done` processed, seen at `at` s. */
function status(done: number, at: number, syncId = 'sync_a'): SyncStatusDto {
  return {
    sync_id: syncId,
    captured_at: new Date(Date.parse(START) + at * 1000).toISOString(),
    initial_sync: {
      phase: 'running',
      started_at: START,
      finished_at: null,
      progress: {
        pairs: [
          {
            table_pair: 0,
            left_table: 'a',
            right_table: 'b',
            stage: 'link_left',
            match_field: null,
            preview: {
              left_records: 1000,
              right_records: 1000,
              matched: 0,
              to_create_left: 1000,
              to_create_right: 1000,
              skipped: 0,
            },
            processed: { left: done, right: 0 },
          },
        ],
      },
    },
  } as unknown as SyncStatusDto;
}

describe('console sync overview', () => {
  it('measures the rate over the last samples this process saw, the average since the start before that', () => {
    const samples = new PaceSamples();
    // 100 s of preparation, then 200 records by 110 s: the average says 2/s, far below the pace.
    expect(samples.pace(status(200, 110))).toEqual({
      done: 200,
      total: 2000,
      rate: 200 / 110,
      rateOver: 'since_start',
      secondsLeft: Math.ceil(1800 / (200 / 110)),
    });
    // 2 s later 400 more: 200 records/s lately, 7 s left.
    expect(samples.pace(status(600, 112))).toMatchObject({ rate: 200, rateOver: 'recent', secondsLeft: 7 });
    // Samples older than 30 s drop out of the window: measured from 112 s on (1,000 in 30 s).
    expect(samples.pace(status(1600, 142))).toMatchObject({ rate: 1000 / 30, rateOver: 'recent' });
    // Another sync is measured on its own.
    expect(samples.pace(status(10, 5, 'sync_b'))).toMatchObject({ rate: 2, rateOver: 'since_start' });
  });

  it('forgets a sync whose initial sync stopped running', () => {
    const samples = new PaceSamples();
    samples.pace(status(100, 10));
    samples.forget('sync_a');
    expect(samples.pace(status(300, 12))).toMatchObject({ rateOver: 'since_start', rate: 25 });
  });

  it('has no rate before anything was done, and never counts past the total', () => {
    const samples = new PaceSamples();
    expect(samples.pace(status(0, 3))).toMatchObject({ done: 0, rate: null, secondsLeft: null });
    expect(samples.pace(status(5000, 10)).done).toBe(2000);
  });

  it.each([
    [45, '45 s'],
    [200, '3 min 20 s'],
    [7500, '2 h 5 min'],
  ])('writes %i seconds as %s', (seconds, text) => expect(duration(seconds)).toBe(text));

  it('counts pending actions, held deletes and open issues under "Needs you", each with its link', () => {
    const sync = {
      id: 'sync_a',
      pending_actions: [{ type: 'user_confirmation', url: 'http://x.test/app/syncs/sync_a/review' }],
      pending_deletes: 2,
      open_issues: 1,
    } as unknown as SyncDto;
    const cell = needsYou(sync).value;
    expect(cell).toContain('data-needs="4"');
    expect(cell).toContain('<a href="/app/syncs/sync_a/review">review and start</a>');
    expect(cell).toContain('<a href="/app/syncs/sync_a/pending-deletes">2 held deletes</a>');
    expect(cell).toContain('<a href="/app/syncs/sync_a/issues">1 open issue</a>');
    const calm = { ...sync, pending_actions: [], pending_deletes: undefined, open_issues: 0 } as SyncDto;
    expect(needsYou(calm).value).toContain('nothing');
  });
});
