import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { createDataSource } from '../data-source';
import { type IssueOccurrence, raiseIssues } from './raise-issues';

/** The test store (migrated by the jest global setup). */
const STORE_URL = process.env['DATABASE_URL']!;

interface Row {
  id: string;
  occurrence_count: number;
  resolved: boolean;
  message: string;
  first_seen_at: Date;
}

const occurrence = (dedupeKey: string, message = 'it failed'): IssueOccurrence => ({
  type: 'record',
  code: 'record_error',
  side: 'right',
  connector: 'mysql',
  message,
  remediation: { explanation: 'why', suggested_action: 'what', links: [] },
  dedupeKey,
});

describe('raiseIssues: an issue is a failure, not one occurrence of it', () => {
  let db: DataSource;
  let syncId: string;

  const issues = async (key: string): Promise<Row[]> =>
    db.query(
      `SELECT id, occurrence_count, resolved_at IS NOT NULL AS resolved, message, first_seen_at FROM sync_issues
       WHERE sync_id = $1 AND dedupe_key = $2 ORDER BY first_seen_at, id`,
      [syncId, key],
    );
  const resolve = (key: string) =>
    db.query(`UPDATE sync_issues SET resolved_at = now() WHERE sync_id = $1 AND dedupe_key = $2`, [
      syncId,
      key,
    ]);

  beforeAll(async () => {
    db = createDataSource(STORE_URL);
    await db.initialize();
  });
  afterAll(async () => {
    await db?.destroy();
  });
  beforeEach(async () => {
    const accountId = `acc_${randomBytes(6).toString('hex')}`;
    syncId = `sync_${randomBytes(6).toString('hex')}`;
    await db.query(`INSERT INTO accounts (id, email, password_hash) VALUES ($1, $2, 'x')`, [
      accountId,
      `${accountId}@example.com`,
    ]);
    await db.query(`INSERT INTO syncs (id, account_id, name) VALUES ($1, $2, 'issues')`, [syncId, accountId]);
  });

  it('counts a repeat on the open issue, and reopens a resolved one under its id with the latest message', async () => {
    await raiseIssues(db, syncId, [occurrence('a')]);
    await raiseIssues(db, syncId, [occurrence('a')]);
    const [open] = await issues('a');
    expect(open).toMatchObject({ occurrence_count: 2, resolved: false });

    await resolve('a');
    await raiseIssues(db, syncId, [occurrence('a', 'it failed again'), occurrence('b')]);
    expect(await issues('a')).toEqual([
      { ...open, occurrence_count: 3, resolved: false, message: 'it failed again' },
    ]);
    expect(await issues('b')).toEqual([expect.objectContaining({ occurrence_count: 1, resolved: false })]);
  });

  it('counts on the open issue when earlier ones of the failure were resolved (history from before reopening)', async () => {
    await raiseIssues(db, syncId, [occurrence('h')]);
    await resolve('h');
    await db.query(
      `UPDATE sync_issues SET first_seen_at = first_seen_at - interval '1 day' WHERE sync_id = $1`,
      [syncId],
    );
    await db.query(
      `INSERT INTO sync_issues (id, sync_id, type, code, side, connector, message, remediation, dedupe_key)
       VALUES ($1, $2, 'record', 'record_error', 'right', 'mysql', 'newer', '{}', 'h')`,
      [`iss_${randomBytes(6).toString('hex')}`, syncId],
    );
    await raiseIssues(db, syncId, [occurrence('h')]);
    const [older, newer] = await issues('h');
    expect(older).toMatchObject({ occurrence_count: 1, resolved: true });
    expect(newer).toMatchObject({ occurrence_count: 2, resolved: false });
  });

  it('two writers of one failure make one issue and count both, whether it is new or reopened', async () => {
    await Promise.all([
      raiseIssues(db, syncId, [occurrence('c')]),
      raiseIssues(db, syncId, [occurrence('c')]),
    ]);
    expect(await issues('c')).toEqual([expect.objectContaining({ occurrence_count: 2, resolved: false })]);
    await resolve('c');
    await Promise.all([
      raiseIssues(db, syncId, [occurrence('c')]),
      raiseIssues(db, syncId, [occurrence('c')]),
    ]);
    expect(await issues('c')).toEqual([expect.objectContaining({ occurrence_count: 4, resolved: false })]);
  });
});
