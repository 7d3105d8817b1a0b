import { createHash } from 'node:crypto';
import { DataSource } from 'typeorm';
import { fieldChangesJson, insertOperations } from '../operations/operation-writes';
import { contentHash, setShadow, shadowJson, stableJson } from './link-hashes';
import { insertLinks, type LinkRow, loadLinks, loadLinksById, saveLinks } from './record-links';
import { RIGHT_SHADOW, SAME_AS_LEFT } from './right-shadow';
import { linkRow } from '../test/link-row';

/** The definition the stored hashes were made with: sha1 of the stable JSON of the picked fields. */
function reference(values: Record<string, unknown>, fields: string[]): string {
  const picked: Record<string, unknown> = {};
  for (const field of fields) picked[field] = values[field] ?? null;
  return createHash('sha1').update(stableJson(picked)).digest('base64url');
}

describe('contentHash', () => {
  const cases: [string, Record<string, unknown>, string[]][] = [
    ['flat values in any field order', { b: 'x', a: 1, c: true }, ['c', 'a', 'b']],
    ['missing and undefined fields count as null', { a: undefined, b: null }, ['a', 'b', 'z']],
    ['unmapped values are left out', { a: 1, secret: 'no' }, ['a']],
    [
      'arrays and nested objects',
      { list: [3, 'two', { y: 1, x: [null] }], obj: { z: 1, a: 'q' } },
      ['obj', 'list'],
    ],
    ['repeated fields', { a: 1 }, ['a', 'a']],
    ['keys needing JSON escapes', { 'we"ird\\key': 'v\n', ü: 2.5 }, ['ü', 'we"ird\\key']],
    ['no fields', { a: 1 }, []],
    ['non-finite numbers and empty strings', { n: Number.NaN, e: '' }, ['n', 'e']],
  ];
  it.each(cases)('equals the stable-JSON definition: %s', (_name, values, fields) => {
    expect(contentHash(values, fields)).toBe(reference(values, fields));
  });

  it('is the same for the same fields list reused, and differs when a value differs', () => {
    const fields = ['name', 'qty'];
    expect(contentHash({ name: 'a', qty: 1 }, fields)).toBe(contentHash({ qty: 1, name: 'a' }, fields));
    expect(contentHash({ name: 'a', qty: 1 }, fields)).not.toBe(contentHash({ name: 'a', qty: 2 }, fields));
    expect(contentHash({ name: 'a', qty: 1 }, fields)).not.toBe(contentHash({ name: 'a', qty: '1' }, fields));
  });

  it('gives each text its own hash when the same text comes twice in a row (the last hash is reused) and in between', () => {
    const sequence: [Record<string, unknown>, string[]][] = [
      [{ a: 1 }, ['a']],
      [{ a: 1 }, ['a']],
      [{ a: 2 }, ['a']],
      [{ a: 1 }, ['a']],
      [{ b: 1 }, ['b']],
    ];
    for (const [values, fields] of sequence)
      expect(contentHash(values, fields)).toBe(reference(values, fields));
  });

  it('is null without values', () => {
    expect(contentHash(null, ['a'])).toBeNull();
  });
});

describe('setShadow and shadowJson', () => {
  const bare = (): LinkRow => ({
    id: 'rec_1',
    service_id: '44444444-4444-4444-8444-000000000001',
    table_pair: 0,
    name: null,
    left_remote_id: 'L1',
    right_remote_id: null,
    left_shadow: null,
    right_shadow: null,
    left_hash: null,
    right_hash: null,
    left_deleted: false,
    right_deleted: false,
    left_filtered: false,
    right_filtered: false,
    left_sync_disabled: false,
    right_sync_disabled: false,
    dead: false,
    create_pending: null,
    left_changed_at: null,
    right_changed_at: null,
  });

  it('hash as contentHash does; a shadow holding exactly the mapped fields is stored as the text it was hashed from', () => {
    const fields = ['qty', 'name', 'tags'];
    const shadow = { name: 'a\tb "q"', qty: 2, tags: { z: 1, a: [2] } };
    const link = bare();
    setShadow(link, 'left', shadow, fields);
    expect(link.left_shadow).toBe(shadow);
    expect(link.left_hash).toBe(reference(shadow, fields));
    expect(shadowJson(link, 'left')).toBe(stableJson(shadow));
    expect(JSON.parse(shadowJson(link, 'left')!)).toEqual(shadow);
    expect(shadowJson(link, 'right')).toBeNull();
    // What it remembers is not part of the row: not listed, not in its JSON.
    expect(Object.keys(link)).toEqual(Object.keys(bare()));
    expect(JSON.parse(JSON.stringify(link))).toEqual({
      ...bare(),
      left_shadow: shadow,
      left_hash: reference(shadow, fields),
    });
  });

  it.each([
    ['an extra key', { name: 'a', qty: 1, old: 'kept' }],
    ['a missing field', { name: 'a' }],
    ['an undefined value', { name: 'a', qty: undefined }],
  ])('a shadow with %s hashes its mapped fields and is stored whole, as it is', (_name, shadow) => {
    const fields = ['name', 'qty'];
    const link = bare();
    setShadow(link, 'right', shadow, fields);
    expect(link.right_hash).toBe(reference(shadow, fields));
    expect(shadowJson(link, 'right')).toBe(JSON.stringify(shadow));
  });

  it('a shadow not set by setShadow (read from the store, or replaced since) is stored as JSON.stringify gives it', () => {
    const link = bare();
    link.left_shadow = { b: 1, a: 2 };
    expect(shadowJson(link, 'left')).toBe('{"b":1,"a":2}');
    setShadow(link, 'left', { a: 1 }, ['a']);
    link.left_shadow = { b: 2, a: 1 };
    expect(shadowJson(link, 'left')).toBe('{"b":2,"a":1}');
    const copy = { ...link, left_shadow: { a: 3 } };
    expect(shadowJson(copy, 'left')).toBe('{"a":3}');
  });
});

describe('loadLinks (against the service store)', () => {
  let db: DataSource;
  const syncId = `sync_loadlinks${Date.now().toString(36)}`;
  const accountId = `acct_loadlinks${Date.now().toString(36)}`;
  // A service id this sync derived for a copy of its own (any uuid: loadLinks looks it up among all links).
  const own = '55555555-5555-4555-8555-555555555555';
  const ids = {
    placed: '11111111-1111-4111-8111-111111111111',
    unplaced: '22222222-2222-4222-8222-222222222222',
    own,
    otherOwn: '33333333-3333-4333-8333-333333333333',
  };

  beforeAll(async () => {
    db = new DataSource({ type: 'postgres', url: process.env['DATABASE_URL'], entities: [] });
    await db.initialize();
    await db.query(`INSERT INTO accounts (id, email, password_hash) VALUES ($1, $2, 'x')`, [
      accountId,
      `${accountId}@example.com`,
    ]);
    await db.query(`INSERT INTO syncs (id, account_id, name) VALUES ($1, $2, 'loadLinks')`, [
      syncId,
      accountId,
    ]);
    const link = (id: string, serviceId: string, left: string | null, right: string | null) =>
      db.query(
        `INSERT INTO record_links (id, sync_id, table_pair, service_id, left_remote_id, right_remote_id) VALUES ($1, $2, 0, $3, $4, $5)`,
        [id, syncId, serviceId, left, right],
      );
    await link('rec_placed', ids.placed, 'L1', 'R1');
    await link('rec_unplaced', ids.unplaced, 'L2', null);
    await link('rec_own', ids.own, 'L3', 'R3');
  });

  afterAll(async () => {
    await db.query(`DELETE FROM accounts WHERE id = $1`, [accountId]);
    await db.destroy();
  });

  const found = async (left: string[], right: string[], serviceIds: { own: string[]; unplaced: string[] }) =>
    (await loadLinks(db, syncId, 0, left, right, serviceIds)).map((link) => link.id).sort();

  it('finds links by either remote id', async () => {
    expect(await found(['L1'], ['R3'], { own: [], unplaced: [] })).toEqual(['rec_own', 'rec_placed']);
  });

  it('finds a link by a service id of its own among all links, and by any other service id only when it lacks a remote id', async () => {
    expect(await found([], [], { own: [ids.own], unplaced: [] })).toEqual(['rec_own']);
    expect(await found([], [], { own: [], unplaced: [ids.placed, ids.unplaced] })).toEqual(['rec_unplaced']);
    expect(await found([], [], { own: [], unplaced: [ids.otherOwn] })).toEqual([]);
  });

  it('returns nothing for nothing to look up', async () => {
    expect(await found([], [], { own: [], unplaced: [] })).toEqual([]);
  });
});

describe('insertLinks and insertOperations (against the service store)', () => {
  let db: DataSource;
  const syncId = `sync_insertlinks${Date.now().toString(36)}`;
  const accountId = `acct_insertlinks${Date.now().toString(36)}`;

  beforeAll(async () => {
    db = new DataSource({ type: 'postgres', url: process.env['DATABASE_URL'], entities: [] });
    await db.initialize();
    await db.query(`INSERT INTO accounts (id, email, password_hash) VALUES ($1, $2, 'x')`, [
      accountId,
      `${accountId}@example.com`,
    ]);
    await db.query(`INSERT INTO syncs (id, account_id, name) VALUES ($1, $2, 'insertLinks')`, [
      syncId,
      accountId,
    ]);
  });

  afterAll(async () => {
    await db.query(`DELETE FROM accounts WHERE id = $1`, [accountId]);
    await db.destroy();
  });

  const link = (id: string, n: number): LinkRow =>
    linkRow(id, n, 4, {
      left_shadow: { name: `name ${n}`, note: 'tab\there' },
      right_shadow: { full_name: `name ${n}` },
    });

  it('copies new links with the transaction time as created, updated and seen time of the sides seen (NULL for a side not seen), and operations at that time', async () => {
    const links = [
      link('rec_both1', 1),
      link('rec_left', 2),
      link('rec_none', 3),
      link('rec_both2', 4),
      link('rec_right', 5),
    ];
    const now = await db.transaction(async (tx) => {
      await insertLinks(tx, syncId, links, {
        left: ['rec_both1', 'rec_left', 'rec_both2'],
        right: ['rec_both1', 'rec_both2', 'rec_right'],
      });
      await insertOperations(tx, syncId, [
        {
          record_id: 'rec_both1',
          table_pair: 0,
          side: 'right',
          table_id: 'tbl_x',
          table_name: 'x',
          record_remote_id: 'R1',
          record_name: 'name 1',
          action: 'created',
          trigger: 'push',
          field_changes: [{ field: 'full_name', before: null, after: 'name 1' }],
          details: null,
        },
      ]);
      return ((await tx.query(`SELECT now() AS now`)) as { now: Date }[])[0]!.now;
    });
    const rows: {
      id: string;
      left_seen_at: Date | null;
      right_seen_at: Date | null;
      created_at: Date;
      updated_at: Date;
      left_shadow: unknown;
      name: string;
    }[] = await db.query(
      `SELECT id, left_seen_at, right_seen_at, created_at, updated_at, left_shadow, name FROM record_links WHERE sync_id = $1 ORDER BY id`,
      [syncId],
    );
    const at = (value: Date | null) => (value === null ? null : value.toISOString());
    expect(rows.map((row) => [row.id, at(row.left_seen_at), at(row.right_seen_at)])).toEqual([
      ['rec_both1', now.toISOString(), now.toISOString()],
      ['rec_both2', now.toISOString(), now.toISOString()],
      ['rec_left', now.toISOString(), null],
      ['rec_none', null, null],
      ['rec_right', null, now.toISOString()],
    ]);
    for (const row of rows)
      expect([at(row.created_at), at(row.updated_at)]).toEqual([now.toISOString(), now.toISOString()]);
    expect(rows[0]).toMatchObject({ name: 'name 1', left_shadow: { name: 'name 1', note: 'tab\there' } });
    const [operation] = await db.query(
      `SELECT occurred_at, field_changes FROM operations WHERE sync_id = $1`,
      [syncId],
    );
    expect(operation.occurred_at.toISOString()).toBe(now.toISOString());
    // A null `before` is left out of what is stored (the API reads it as null).
    expect(operation.field_changes).toEqual([{ field: 'full_name', after: 'name 1' }]);
  });

  it('stores a right shadow equal to the left one once, and every reader sees both', async () => {
    const same = { ...link('rec_same', 6), left_shadow: { a: 1, b: 'x' }, right_shadow: { a: 1, b: 'x' } };
    const differs = { ...link('rec_diff', 7), left_shadow: { a: 1, b: 'x' }, right_shadow: { b: 'x', a: 1 } };
    const onlyLeft = {
      ...link('rec_oneside', 8),
      right_remote_id: null,
      left_shadow: { a: 2 },
      right_shadow: null,
    };
    const flagged = {
      ...link('rec_flagged', 9),
      left_shadow: { a: 3 },
      right_shadow: { a: 3 },
      right_filtered: true,
      create_pending: 'left' as const,
    };
    await db.transaction((tx) =>
      insertLinks(tx, syncId, [same, differs, onlyLeft, flagged], { left: [], right: [] }),
    );
    const stored: {
      id: string;
      right: string | null;
      right_filtered: boolean;
      create_pending: string | null;
    }[] = await db.query(
      `SELECT id, right_shadow::text AS right, right_filtered, create_pending FROM record_links WHERE id = ANY($1::text[]) ORDER BY id`,
      [['rec_same', 'rec_diff', 'rec_oneside', 'rec_flagged']],
    );
    expect(stored).toEqual([
      { id: 'rec_diff', right: '{"b":"x","a":1}', right_filtered: false, create_pending: null },
      { id: 'rec_flagged', right: SAME_AS_LEFT, right_filtered: true, create_pending: 'left' },
      { id: 'rec_oneside', right: null, right_filtered: false, create_pending: null },
      { id: 'rec_same', right: SAME_AS_LEFT, right_filtered: false, create_pending: null },
    ]);
    const loaded = new Map(
      (await loadLinksById(db, ['rec_same', 'rec_diff', 'rec_oneside', 'rec_flagged'])).map((row) => [
        row.id,
        row,
      ]),
    );
    expect(loaded.get('rec_same')).toMatchObject({
      left_shadow: { a: 1, b: 'x' },
      right_shadow: { a: 1, b: 'x' },
    });
    expect(loaded.get('rec_diff')).toMatchObject({ right_shadow: { b: 'x', a: 1 } });
    expect(loaded.get('rec_oneside')).toMatchObject({ left_shadow: { a: 2 }, right_shadow: null });
    expect(loaded.get('rec_flagged')).toMatchObject({
      right_shadow: { a: 3 },
      right_filtered: true,
      create_pending: 'left',
    });
    expect((await loadLinks(db, syncId, 0, ['L6'], [], { own: [], unplaced: [] }))[0]).toMatchObject({
      id: 'rec_same',
      right_shadow: { a: 1, b: 'x' },
    });

    // A later save writes both shadows in full; clearing the left one (a restore) keeps the right one's values.
    await saveLinks(db, syncId, [{ ...loaded.get('rec_same')!, left_shadow: { a: 5, b: 'y' } }], {
      left: [],
      right: [],
    });
    expect(await loadLinksById(db, ['rec_same'])).toMatchObject([
      { left_shadow: { a: 5, b: 'y' }, right_shadow: { a: 1, b: 'x' } },
    ]);
    await db.query(`UPDATE record_links SET right_shadow = left_shadow WHERE id = 'rec_flagged'`);
    await db.query(`UPDATE record_links SET right_shadow = $2::json WHERE id = $1`, [
      'rec_flagged',
      SAME_AS_LEFT,
    ]);
    await db.query(
      `UPDATE record_links SET right_shadow = ${RIGHT_SHADOW}, left_shadow = NULL WHERE id = 'rec_flagged'`,
    );
    expect(await loadLinksById(db, ['rec_flagged'])).toMatchObject([
      { left_shadow: null, right_shadow: { a: 3 } },
    ]);
  });

  it("keeps a side's pending change time (new links by COPY, saved links) and reads it back as ISO 8601 in UTC", async () => {
    const pending = { ...link('rec_pending', 10), left_changed_at: '2026-11-21T10:20:30.123456Z' };
    await db.transaction((tx) =>
      insertLinks(tx, syncId, [pending, link('rec_plain', 11)], { left: [], right: [] }),
    );
    const loaded = new Map(
      (await loadLinksById(db, ['rec_pending', 'rec_plain'])).map((row) => [row.id, row]),
    );
    expect(loaded.get('rec_pending')).toMatchObject({
      left_changed_at: '2026-11-21T10:20:30.123456Z',
      right_changed_at: null,
    });
    expect(loaded.get('rec_plain')).toMatchObject({ left_changed_at: null, right_changed_at: null });
    await saveLinks(
      db,
      syncId,
      [
        {
          ...loaded.get('rec_pending')!,
          left_changed_at: null,
          right_changed_at: '2026-11-21T11:00:00+01:00',
        },
      ],
      { left: [], right: [] },
    );
    expect(await loadLinksById(db, ['rec_pending'])).toMatchObject([
      { left_changed_at: null, right_changed_at: '2026-11-21T10:00:00.000000Z' },
    ]);
  });
});

describe('fieldChangesJson', () => {
  it.each([
    ['nothing', [], '[]'],
    [
      'a create: no before',
      [
        { field: 'n', before: null, after: 'x' },
        { field: 'q', before: undefined, after: 2 },
      ],
      '[{"field":"n","after":"x"},{"field":"q","after":2}]',
    ],
    [
      'an update: before and after',
      [{ field: 'n', before: 'a', after: null }],
      '[{"field":"n","before":"a","after":null}]',
    ],
    [
      'falsy befores are kept',
      [
        { field: 'z', before: 0, after: 1 },
        { field: 'f', before: false, after: true },
        { field: 'e', before: '', after: 'x' },
      ],
      '[{"field":"z","before":0,"after":1},{"field":"f","before":false,"after":true},{"field":"e","before":"","after":"x"}]',
    ],
    [
      'JSON escapes and structured values',
      [{ field: 'we"ird', before: { k: [1] }, after: 'line\nbreak' }],
      '[{"field":"we\\"ird","before":{"k":[1]},"after":"line\\nbreak"}]',
    ],
  ])('%s', (_name, changes, expected) => {
    expect(fieldChangesJson(changes)).toBe(expected);
    const parsed = JSON.parse(expected) as { field: string; before?: unknown; after: unknown }[];
    expect(
      parsed.map((change) => ({ field: change.field, before: change.before ?? null, after: change.after })),
    ).toEqual(
      changes.map((change) => ({ field: change.field, before: change.before ?? null, after: change.after })),
    );
  });
});
