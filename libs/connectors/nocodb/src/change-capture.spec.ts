/**
 * Change detection against the real NocoDB: the webhook installed at table setup calls the notification
 * endpoint (a stand-in here, `test/receiver.ts`; the API's own endpoint is tested in apps/api), which wakes the
 * watcher at once; the feed reads records by UpdatedAt / CreatedAt with an overlap window, deletes through the
 * webhook's hints (verified against NocoDB), and pages with a limit. Without PUBLIC_URL, polling alone.
 */
import type { Connection } from '@lockstep/connectors-core';
import { LocalCoordination } from '@lockstep/connectors-http';
import { randomBytes } from 'node:crypto';
import { channelOf, signalChannel } from './change-capture';
import { startReceiver, type Receiver } from './testing/receiver';
import { admin, describeNocodb, uniqueName, useNocodb } from './test/server';

const KEY = randomBytes(16).toString('hex');

async function waitFor<T>(what: string, probe: () => T | Promise<T>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describeNocodb('nocodb change detection (real server)', () => {
  const nocodb = useNocodb('capture');
  const shared = new LocalCoordination();
  let receiver: Receiver;
  let tableId: string;
  let connection: Connection;

  const createTable = async (title: string) =>
    (
      await admin<{ id: string }>(nocodb.server, 'POST', `/api/v2/meta/bases/${nocodb.baseId}/tables`, {
        title,
        table_name: title,
        columns: [{ title: 'title', uidt: 'SingleLineText' }],
      })
    ).id;
  const insert = (table: string, rows: Record<string, unknown>[]) =>
    admin<{ Id: number }[]>(nocodb.server, 'POST', `/api/v2/tables/${table}/records`, rows);
  const hooksOf = async (table: string) =>
    (await admin<{ list: { id: string }[] }>(nocodb.server, 'GET', `/api/v2/meta/tables/${table}/hooks`))
      .list;

  beforeAll(async () => {
    receiver = await startReceiver(shared.signals, KEY);
    tableId = await createTable(uniqueName('watched'));
    connection = await nocodb.connect(undefined, {
      context: {
        shared,
        settings: { PUBLIC_URL: receiver.url, NOCODB_HOOK_KEY: KEY, NOCODB_POLL_SECONDS: '600' },
      },
    });
  });
  afterAll(async () => receiver.close());

  it('installs one webhook at table setup, idempotently', async () => {
    await connection.prepareTable(tableId, { changeCapture: true });
    await connection.prepareTable(tableId, { changeCapture: true });
    expect(await hooksOf(tableId)).toHaveLength(1);
  });

  it('wakes the watcher within 2 s of a change made in NocoDB, through the webhook (polling every 10 min)', async () => {
    const since = await connection.currentCheckpoint(tableId);
    let woken = 0;
    const stop = await connection.watch!([tableId], () => (woken += 1));
    try {
      const started = Date.now();
      const [row] = await insert(tableId, [{ title: 'from NocoDB' }]);
      await waitFor('the wake-up', () => woken > 0, 2000);
      const latency = Date.now() - started;
      expect(latency).toBeLessThan(2000);
      expect(receiver.calls.at(-1)).toMatchObject({
        signed: true,
        channel: channelOf(nocodb.server.url, tableId),
      });
      const batch = await connection.readChanges(tableId, since, { limit: 100 });
      const change = batch.changes.find((candidate) => candidate.remoteId === String(row!.Id));
      expect(change).toMatchObject({ kind: 'upsert', own: false });
      expect(Object.values(change!.record!.values)).toContain('from NocoDB');
    } finally {
      await stop();
    }
  });

  it('reads outside updates, and deletes through the webhook hint once NocoDB no longer has the record', async () => {
    const [kept, gone] = await insert(tableId, [{ title: 'kept' }, { title: 'gone' }]);
    const since = await connection.currentCheckpoint(tableId);
    const callsBefore = receiver.calls.length;
    await admin(nocodb.server, 'PATCH', `/api/v2/tables/${tableId}/records`, [
      { Id: kept!.Id, title: 'edited' },
    ]);
    await admin(nocodb.server, 'DELETE', `/api/v2/tables/${tableId}/records`, [{ Id: gone!.Id }]);
    await waitFor('the delete notification', () => receiver.calls.length >= callsBefore + 2, 5000);
    const batch = await connection.readChanges(tableId, since, { limit: 100 });
    const byId = new Map(batch.changes.map((change) => [change.remoteId, change]));
    expect(byId.get(String(kept!.Id))).toMatchObject({ kind: 'upsert' });
    expect(Object.values(byId.get(String(kept!.Id))!.record!.values)).toContain('edited');
    expect(byId.get(String(gone!.Id))).toMatchObject({ kind: 'delete', own: false });
    // Read from the new checkpoint: the hint is behind it and nothing changed since.
    const after = await connection.readChanges(tableId, batch.checkpoint, { limit: 100 });
    expect(after.changes.filter((change) => change.kind === 'delete')).toEqual([]);
  });

  it('never reports a delete from a hint alone: a hinted record NocoDB still has is no delete', async () => {
    const [row] = await insert(tableId, [{ title: 'still here' }]);
    const since = await connection.currentCheckpoint(tableId);
    await shared.signals.publish(signalChannel(channelOf(nocodb.server.url, tableId)), [
      String(row!.Id),
      '999999',
      'not-a-key',
    ]);
    const batch = await connection.readChanges(tableId, since, { limit: 100 });
    expect(
      batch.changes.filter((change) => change.kind === 'delete').map((change) => change.remoteId),
    ).toEqual(['999999']);
  });

  it('pages through changes with a limit, losing none', async () => {
    const since = await connection.currentCheckpoint(tableId);
    const rows = await insert(
      tableId,
      Array.from({ length: 7 }, (_, index) => ({ title: `page ${index}` })),
    );
    const seen = new Set<string>();
    let checkpoint = since;
    for (let round = 0; round < 10; round += 1) {
      const batch = await connection.readChanges(tableId, checkpoint, { limit: 3 });
      expect(batch.changes.length).toBeLessThanOrEqual(3);
      batch.changes.forEach((change) => seen.add(change.remoteId));
      checkpoint = batch.checkpoint;
      if (!batch.hasMore) break;
    }
    for (const row of rows) expect(seen).toContain(String(row.Id));
  });

  it('removes the webhook at teardown, idempotently, and keeps the data', async () => {
    await connection.unprepareTable(tableId);
    await connection.unprepareTable(tableId);
    expect(await hooksOf(tableId)).toHaveLength(0);
    expect(await connection.countRecords!(tableId)).toBeGreaterThan(0);
  });

  it('without PUBLIC_URL installs no webhook, and polling alone wakes the watcher within the poll interval', async () => {
    const table = await createTable(uniqueName('polled'));
    const polled = await nocodb.connect(undefined, {
      context: { shared: new LocalCoordination(), settings: { NOCODB_POLL_SECONDS: '1' } },
    });
    await polled.prepareTable(table, { changeCapture: true });
    expect(await hooksOf(table)).toHaveLength(0);
    let woken = 0;
    const stop = await polled.watch!([table], () => (woken += 1));
    try {
      await insert(table, [{ title: 'polled' }]);
      // One poll interval (1 s) plus the probe's two requests on a busy machine.
      await waitFor('the poll wake-up', () => woken > 0, 4000);
    } finally {
      await stop();
    }
  });
});
