/**
 * An initial sync interrupted or started again: paused while it is prepared, then activated; paused, its
 * mappings edited and started once more on tables that already hold the same rows (the preview and the run
 * agree, and a row on both sides with the same match value is linked, not created a second time, whatever
 * links the earlier start left).
 */
import type { INestApplicationContext } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { MysqlConnection } from '@lockstep/connector-mysql';
import type { Job } from 'bull';
import { SyncsProcessor } from '../../src/syncs/syncs.processor';
import { EngineScheduler } from '../../src/engine/engine.scheduler';
import {
  createStartedSync,
  inProcessWorker,
  type My,
  phase,
  type Pg,
  scratchMysql,
  scratchPg,
  store,
  waitFor,
} from '../support/fixture';

jest.setTimeout(120_000);

describe('engine: an initial sync interrupted or started again', () => {
  let db: DataSource;
  let pg: Pg;
  let my: My;
  let worker: INestApplicationContext | null = null;

  beforeAll(async () => {
    db = await store();
  });
  afterAll(async () => {
    await db.destroy();
  });
  beforeEach(async () => {
    // The same people on both sides, under other ids; email is unique on both.
    pg = await scratchPg(`
      CREATE TABLE people (id serial PRIMARY KEY, name text NOT NULL, email text UNIQUE);
      INSERT INTO people (name, email) VALUES ('Ada', 'ada@example.com'), ('Grace', 'grace@example.com'), ('Linus', 'linus@example.com');
    `);
    my = await scratchMysql([
      `CREATE TABLE contacts (id INT AUTO_INCREMENT PRIMARY KEY, full_name VARCHAR(40) NOT NULL, email VARCHAR(100) UNIQUE)`,
      `INSERT INTO contacts (id, full_name, email) VALUES (10, 'Grace', 'grace@example.com'), (11, 'Ada', 'ada@example.com'), (12, 'Linus', 'linus@example.com')`,
    ]);
  });
  afterEach(async () => {
    await worker?.close();
    worker = null;
    await pg.drop();
    await my.drop();
  });

  const count = async (sql: string, params: unknown[]) =>
    Number(((await db.query(sql, params)) as { n: string }[])[0]!.n);

  /** What `sync start` does to a paused sync whose mappings were edited (back to draft, then started). */
  async function startAgain(
    syncId: string,
    match: { tablePair: number; leftField: string; rightField: string }[],
  ) {
    await db.query(`UPDATE syncs SET status = 'paused' WHERE id = $1`, [syncId]);
    await waitFor('the runner stopped', async () => !worker!.get(EngineScheduler).owned.includes(syncId));
    await db.query(
      `UPDATE syncs SET status = 'draft', mappings_revision = mappings_revision + 1 WHERE id = $1`,
      [syncId],
    );
    await db.query(
      `UPDATE syncs SET status = 'active', initial_sync_phase = 'preparing', initial_sync_progress = NULL, initial_sync_finished_at = NULL,
         reviewed_revision = mappings_revision, start_options = $2 WHERE id = $1`,
      [syncId, JSON.stringify({ prefer: 'left', match })],
    );
  }

  const EMAIL_MATCH = [{ tablePair: 0, leftField: 'email', rightField: 'email' }];
  /** A started PostgreSQL people <-> MariaDB contacts sync of name and email, matched by `match` if given. */
  const startPeopleSync = (match?: typeof EMAIL_MATCH) =>
    createStartedSync(db, {
      left: { connector: 'postgres', base: pg.schema },
      right: { connector: 'mysql', base: my.database },
      pairs: [
        {
          left: 'people',
          right: 'contacts',
          fields: [
            ['name', 'full_name'],
            ['email', 'email'],
          ],
        },
      ],
      ...(match ? { match } : {}),
    });

  it('a start without a match field failed its creates; started again with one, every row is linked and none created', async () => {
    const ids = await startPeopleSync();
    worker = await inProcessWorker(ids.accountId);
    await waitFor('first initial sync done', async () => (await phase(db, ids.syncId)) === 'done');
    const [first] = await db.query(`SELECT initial_sync_progress FROM syncs WHERE id = $1`, [ids.syncId]);
    // No match field: every row was a create on the other side, refused as a duplicate email.
    expect(first.initial_sync_progress.pairs[0]).toMatchObject({
      preview: { matched: 0, to_create_left: 3, to_create_right: 3 },
      created: { left: 0, right: 0 },
      failed: 6,
    });

    await startAgain(ids.syncId, [{ tablePair: 0, leftField: 'email', rightField: 'email' }]);
    await waitFor('second initial sync done', async () => (await phase(db, ids.syncId)) === 'done');
    const [second] = await db.query(`SELECT initial_sync_progress FROM syncs WHERE id = $1`, [ids.syncId]);
    const entry = second.initial_sync_progress.pairs[0];
    expect(entry.preview).toMatchObject({
      left_records: 3,
      right_records: 3,
      matched: 3,
      to_create_left: 0,
      to_create_right: 0,
      skipped: 0,
    });
    expect(entry).toMatchObject({ created: { left: 0, right: 0 }, failed: 0 });
    expect(await pg.sql(`SELECT count(*)::int AS n FROM people`)).toEqual([{ n: 3 }]);
    expect(await my.sql(`SELECT count(*) AS n FROM contacts`)).toEqual([{ n: 3 }]);
    const pairs: { l: string; r: string }[] = await db.query(
      `SELECT left_remote_id AS l, right_remote_id AS r FROM record_links WHERE sync_id = $1 ORDER BY right_remote_id`,
      [ids.syncId],
    );
    expect(pairs).toEqual([
      { l: '2', r: '10' },
      { l: '1', r: '11' },
      { l: '3', r: '12' },
    ]);
    expect(
      await count(
        `SELECT count(*) AS n FROM sync_issues WHERE sync_id = $1 AND resolved_at IS NULL AND type <> 'sync_preview'`,
        [ids.syncId],
      ),
    ).toBe(0);
  });

  it('a record whose match value belongs to a record already linked to another one is skipped (reported), not created a second time', async () => {
    await pg.sql(
      `ALTER TABLE people DROP CONSTRAINT people_email_key; DELETE FROM people WHERE name <> 'Ada'`,
    );
    await my.sql(`DELETE FROM contacts`);
    const ids = await startPeopleSync();
    worker = await inProcessWorker(ids.accountId);
    await waitFor('first initial sync done', async () => (await phase(db, ids.syncId)) === 'done');
    await db.query(`UPDATE syncs SET status = 'paused' WHERE id = $1`, [ids.syncId]);
    await waitFor('the runner stopped', async () => !worker!.get(EngineScheduler).owned.includes(ids.syncId));
    // While the sync is off, Ada's copy gets another address and a second Ada arrives on the right.
    await my.sql(`UPDATE contacts SET email = 'ada.l@example.com'`);
    await my.sql(`INSERT INTO contacts (id, full_name, email) VALUES (50, 'Ada', 'ada@example.com')`);

    await startAgain(ids.syncId, [{ tablePair: 0, leftField: 'email', rightField: 'email' }]);
    await waitFor('second initial sync done', async () => (await phase(db, ids.syncId)) === 'done');
    const [second] = await db.query(`SELECT initial_sync_progress FROM syncs WHERE id = $1`, [ids.syncId]);
    expect(second.initial_sync_progress.pairs[0]).toMatchObject({
      preview: {
        left_records: 1,
        right_records: 2,
        matched: 0,
        to_create_left: 0,
        to_create_right: 0,
        skipped: 1,
      },
      created: { left: 0, right: 0 },
      failed: 0,
    });
    expect(await pg.sql(`SELECT name, email FROM people`)).toEqual([
      { name: 'Ada', email: 'ada.l@example.com' },
    ]);
    const preview: { message: string }[] = await db.query(
      `SELECT message FROM sync_issues WHERE sync_id = $1 AND type = 'sync_preview' AND resolved_at IS NULL`,
      [ids.syncId],
    );
    expect(preview).toHaveLength(1);
    expect(preview[0]!.message).toContain('1 record(s) are not matched');
  });

  it('paused while its initial sync is prepared, the sync stays preparing (not running) and activating it prepares and runs it', async () => {
    const ids = await startPeopleSync(EMAIL_MATCH);
    // The person pauses while the preparation reads the match values (after its last check of the status).
    const readPage = MysqlConnection.prototype.readPage;
    let paused = false;
    const spy = jest.spyOn(MysqlConnection.prototype, 'readPage').mockImplementation(async function (
      this: MysqlConnection,
      table,
      options,
    ) {
      if (!paused) {
        paused = true;
        await db.query(`UPDATE syncs SET status = 'paused' WHERE id = $1`, [ids.syncId]);
      }
      return readPage.call(this, table, options);
    });
    try {
      worker = await inProcessWorker(ids.accountId);
      await waitFor('the pause', async () => paused);
      await waitFor(
        'the runner stopped',
        async () => !worker!.get(EngineScheduler).owned.includes(ids.syncId),
      );
    } finally {
      spy.mockRestore();
    }
    expect(
      await db.query(`SELECT status, initial_sync_phase FROM syncs WHERE id = $1`, [ids.syncId]),
    ).toEqual([{ status: 'paused', initial_sync_phase: 'preparing' }]);
    // Activate (spec 3.1: a paused sync whose preparation was interrupted resumes it).
    await db.query(`UPDATE syncs SET status = 'active' WHERE id = $1`, [ids.syncId]);
    await waitFor('initial sync done', async () => (await phase(db, ids.syncId)) === 'done');
    const [sync] = await db.query(`SELECT initial_sync_progress FROM syncs WHERE id = $1`, [ids.syncId]);
    expect(sync.initial_sync_progress.pairs[0]).toMatchObject({
      preview: { matched: 3 },
      created: { left: 0, right: 0 },
      failed: 0,
    });
  });

  it('paused and started again before the worker saw the pause, its runner reads the new phase at once (no safety-poll wait)', async () => {
    const ids = await startPeopleSync(EMAIL_MATCH);
    worker = await inProcessWorker(ids.accountId);
    await waitFor('first initial sync done', async () => (await phase(db, ids.syncId)) === 'done');
    // Let the runner settle into its idle sleep (a safety poll of minutes, a full scan of an hour).
    await new Promise((resolve) => setTimeout(resolve, 1500));
    // Pause, edit and start in one step: no scheduler tick sees the sync inactive, so its runner is kept.
    await db.query(
      `UPDATE syncs SET status = 'active', initial_sync_phase = 'preparing', initial_sync_progress = NULL,
         initial_sync_finished_at = NULL, mappings_revision = mappings_revision + 1,
         reviewed_revision = mappings_revision + 1 WHERE id = $1`,
      [ids.syncId],
    );
    expect(worker.get(EngineScheduler).owned).toContain(ids.syncId);
    await worker.get(SyncsProcessor).activate({ data: { syncId: ids.syncId } } as Job<{ syncId: string }>);
    await waitFor('second initial sync done', async () => (await phase(db, ids.syncId)) === 'done', 20_000);
  });
});
