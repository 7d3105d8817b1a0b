import { DataSource } from 'typeorm';
import { DomainError, ErrorCode } from '@lockstep/contracts';
import { newId } from '@lockstep/domain';
import type { AuthContext } from '../src/common/auth/auth-context';
import { PendingDeletesModule } from '../src/pending-deletes/pending-deletes.module';
import { PendingDeletesService } from '../src/pending-deletes/pending-deletes.service';
import { cli } from './support/cli';
import { ProbeModule } from './support/probe.module';
import { createTestApp, type TestApp } from './support/test-app';

type State = 'awaiting_review' | 'ignored' | 'approved' | 'closed';

interface Row {
  state: State;
  requested_action: string | null;
  ignored_at: Date | null;
  decided_at: Date | null;
  applied_at: Date | null;
}

describe('pending-delete decisions (service and operator CLI)', () => {
  let t: TestApp;
  let db: DataSource;
  let accountId: string;
  let syncId: string;

  beforeAll(async () => {
    t = await createTestApp({}, [ProbeModule, PendingDeletesModule]);
    db = t.app.get(DataSource);
    accountId = (await t.account()).id;
    syncId = await t.bareSync(accountId);
  });
  afterAll(() => t.close());

  const owner = (): AuthContext => ({
    accountId,
    keyId: 'operator',
    scope: 'readwrite',
    syncId: null,
    plan: 'free',
  });

  /** A linked record whose right copy went missing (the left copy survives), held in `state`, with its `detected` entry. */
  async function held(
    state: State = 'awaiting_review',
    sync = syncId,
  ): Promise<{ record: string; pendingDelete: string }> {
    const record = newId('record');
    const pendingDelete = newId('pendingDelete');
    await db.query(
      `INSERT INTO record_links (id, sync_id, table_pair, service_id, left_remote_id, right_remote_id, right_deleted) VALUES ($1, $2, 0, gen_random_uuid(), $3, $4, true)`,
      [record, sync, `l-${record}`, `r-${record}`],
    );
    await db.query(
      `INSERT INTO pending_deletes (id, sync_id, record_id, table_pair, missing_side, delete_from_side, state, ignored_at, decided_at)
       VALUES ($1, $2, $3, 0, 'right', 'left', $4::text, CASE WHEN $4 = 'ignored' THEN now() END, CASE WHEN $4 IN ('approved', 'closed') THEN now() END)`,
      [pendingDelete, sync, record, state],
    );
    await db.query(
      `INSERT INTO pending_delete_events (pending_delete_id, sync_id, record_id, kind, actor) VALUES ($1, $2, $3, 'detected', 'engine')`,
      [pendingDelete, sync, record],
    );
    return { record, pendingDelete };
  }

  async function row(pendingDelete: string): Promise<Row> {
    const [found] = await db.query(
      `SELECT state, requested_action, ignored_at, decided_at, applied_at FROM pending_deletes WHERE id = $1`,
      [pendingDelete],
    );
    return found;
  }

  async function events(pendingDelete: string): Promise<{ kind: string; actor: string | null }[]> {
    return db.query(
      `SELECT kind, actor FROM pending_delete_events WHERE pending_delete_id = $1 ORDER BY id`,
      [pendingDelete],
    );
  }

  function decide(decision: 'approve' | 'ignore' | 'restore', record: string, sync = syncId) {
    return cli('pending-delete', decision, '--sync', sync, '--record', record);
  }

  it('approve records the decision for the engine and prints the held delete', async () => {
    const { record, pendingDelete } = await held();
    const approved = decide('approve', record);
    expect(approved.stderr).toBe('');
    expect(approved.code).toBe(0);
    expect(approved.json()).toMatchObject({
      sync_id: syncId,
      record_id: record,
      state: 'approved',
      missing_side: 'right',
      delete_from_side: 'left',
      requested_action: 'approve',
      applied_at: null,
    });
    expect(approved.json().decided_at).toEqual(expect.any(String));
    const stored = await row(pendingDelete);
    expect(stored).toMatchObject({
      state: 'approved',
      requested_action: 'approve',
      ignored_at: null,
      applied_at: null,
    });
    expect(stored.decided_at).toBeInstanceOf(Date);
    expect(await events(pendingDelete)).toEqual([
      { kind: 'detected', actor: 'engine' },
      { kind: 'approved', actor: 'cli' },
    ]);
  });

  it('ignore keeps the surviving copy (nothing requested) and is idempotent', async () => {
    const { record, pendingDelete } = await held();
    const ignored = decide('ignore', record);
    expect(ignored.code).toBe(0);
    expect(ignored.json()).toMatchObject({ state: 'ignored', requested_action: null });
    const first = await row(pendingDelete);
    expect(first).toMatchObject({ state: 'ignored', requested_action: null });
    expect(first.ignored_at).toBeInstanceOf(Date);
    expect(first.decided_at).toBeInstanceOf(Date);

    const again = decide('ignore', record);
    expect(again.code).toBe(0);
    expect(again.json()).toMatchObject({ state: 'ignored', ignored_at: first.ignored_at!.toISOString() });
    expect(await row(pendingDelete)).toEqual(first);
    expect((await events(pendingDelete)).map((e) => e.kind)).toEqual(['detected', 'ignored']);
  });

  it('restore closes the held delete and asks the engine to re-create the missing copy', async () => {
    const { record, pendingDelete } = await held();
    const restored = decide('restore', record);
    expect(restored.code).toBe(0);
    expect(restored.json()).toMatchObject({ state: 'closed', requested_action: 'restore' });
    expect(await row(pendingDelete)).toMatchObject({
      state: 'closed',
      requested_action: 'restore',
      ignored_at: null,
    });
    expect(await events(pendingDelete)).toEqual([
      { kind: 'detected', actor: 'engine' },
      { kind: 'restored', actor: 'cli' },
    ]);
  });

  it.each([
    ['approve', 'approved', 'approve', 'approved'],
    ['restore', 'closed', 'restore', 'restored'],
  ] as const)('an ignored delete can still be decided: %s', async (decision, state, requested, kind) => {
    const { record, pendingDelete } = await held('ignored');
    const result = decide(decision, record);
    expect(result.code).toBe(0);
    const stored = await row(pendingDelete);
    expect(stored).toMatchObject({ state, requested_action: requested });
    expect(stored.ignored_at).toBeInstanceOf(Date);
    expect((await events(pendingDelete)).map((e) => e.kind)).toEqual(['detected', kind]);
  });

  it.each([
    ['approve', 'approved'],
    ['ignore', 'approved'],
    ['restore', 'approved'],
    ['approve', 'closed'],
    ['ignore', 'closed'],
    ['restore', 'closed'],
  ] as const)('%s on a %s one is a conflict and changes nothing', async (decision, state) => {
    const { record, pendingDelete } = await held(state);
    const before = await row(pendingDelete);
    const error = await t.app
      .get(PendingDeletesService)
      .decide(owner(), syncId, record, decision, 'console')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DomainError);
    expect(error).toMatchObject({
      code: ErrorCode.Conflict,
      message: expect.stringContaining('nothing is left to decide'),
    });
    expect(await row(pendingDelete)).toEqual(before);
    expect((await events(pendingDelete)).map((e) => e.kind)).toEqual(['detected']);
  });

  it('a second decision after approve is refused on the CLI with code: message and exit 1', async () => {
    const { record, pendingDelete } = await held();
    expect(decide('approve', record).code).toBe(0);
    const restore = decide('restore', record);
    expect(restore.code).toBe(1);
    expect(restore.stdout).toBe('');
    expect(restore.stderr).toMatch(
      new RegExp(
        `^lockstep: conflict: Cannot restore the held delete of record ${record}: its delete was already approved at `,
      ),
    );
    expect(await row(pendingDelete)).toMatchObject({ state: 'approved', requested_action: 'approve' });
  });

  it('of two concurrent decisions exactly one applies', async () => {
    const { record, pendingDelete } = await held();
    const service = t.app.get(PendingDeletesService);
    // Hold the row so that both decisions read it as awaiting review and then queue on their updates.
    const gate = db.createQueryRunner();
    await gate.connect();
    await gate.startTransaction();
    await gate.query(`SELECT 1 FROM pending_deletes WHERE id = $1 FOR UPDATE`, [pendingDelete]);
    const settled = Promise.allSettled([
      service.decide(owner(), syncId, record, 'approve', 'console'),
      service.decide(owner(), syncId, record, 'restore', 'console'),
    ]);
    try {
      const deadline = Date.now() + 10_000;
      const waiting = async () =>
        Number(
          (
            await db.query(
              `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE 'UPDATE "pending_deletes"%'`,
            )
          )[0].n,
        );
      while ((await waiting()) < 2 && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 10));
      expect(await waiting()).toBe(2);
    } finally {
      await gate.commitTransaction();
      await gate.release();
    }

    const outcomes = await settled;
    const applied = outcomes.filter((o) => o.status === 'fulfilled');
    const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
    expect(applied).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect(refused[0]!.reason).toMatchObject({
      code: ErrorCode.Conflict,
      message: expect.stringContaining('nothing is left to decide'),
    });
    const kinds = (await events(pendingDelete)).map((e) => e.kind);
    expect(kinds).toHaveLength(2);
    expect((await row(pendingDelete)).state).toBe(kinds[1] === 'approved' ? 'approved' : 'closed');
  });

  it('unknown records, records without a held delete and unknown syncs are not_found', async () => {
    const unknown = decide('approve', newId('record'));
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toMatch(
      /^lockstep: not_found: Record rec_[0-9a-z]{20} has no held delete in sync /,
    );

    const notRecordId = decide('ignore', 'r-123');
    expect(notRecordId.code).toBe(1);
    expect(notRecordId.stderr).toContain('not_found: Record r-123 has no held delete');

    // A held delete of another sync is not this sync's.
    const otherSync = await t.bareSync(accountId);
    const { record, pendingDelete } = await held('awaiting_review', otherSync);
    const wrongSync = decide('approve', record);
    expect(wrongSync.code).toBe(1);
    expect(wrongSync.stderr).toContain('lockstep: not_found: ');
    expect((await row(pendingDelete)).state).toBe('awaiting_review');

    const noSync = decide('approve', record, 'sync_0123456789abcdefghij');
    expect(noSync.code).toBe(1);
    expect(noSync.stderr).toBe('lockstep: not_found: No sync sync_0123456789abcdefghij.\n');
    expect((await row(pendingDelete)).state).toBe('awaiting_review');
  });

  it("another account's sync is not_found, indistinguishable from a missing one", async () => {
    const { record, pendingDelete } = await held();
    const stranger: AuthContext = {
      accountId: (await t.account()).id,
      keyId: 'operator',
      scope: 'readwrite',
      syncId: null,
      plan: 'free',
    };
    const error = await t.app
      .get(PendingDeletesService)
      .decide(stranger, syncId, record, 'approve', 'console')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DomainError);
    expect(error).toMatchObject({ code: ErrorCode.NotFound, message: `No sync ${syncId}.` });
    expect((await row(pendingDelete)).state).toBe('awaiting_review');
    expect((await events(pendingDelete)).map((e) => e.kind)).toEqual(['detected']);
  });

  it('says what is missing on a usage error (exit 2)', () => {
    const missing = cli('pending-delete', 'approve', '--sync', syncId);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('missing --record');
    const unknown = cli('pending-delete', 'delete', '--sync', syncId, '--record', newId('record'));
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('pending-delete approve --sync SYNC_ID --record REC_ID');
  });
});
