import type { CheckpointPolling, Connection } from '@lockstep/connectors-core';
import { ChangeHub } from './change-hub';

/** A connection without `watch` whose tables keep the checkpoints in `positions`; `probes` counts calls. */
function fakeConnection(positions: Map<string, number>, polling?: CheckpointPolling) {
  const calls = { probes: 0 };
  const connection = {
    type: 'fake',
    checkpointPolling: polling,
    currentCheckpoint: async (table: string) => {
      calls.probes += 1;
      return String(positions.get(table) ?? 0);
    },
    close: async () => undefined,
  } as unknown as Connection;
  return { connection, calls };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('ChangeHub polling', () => {
  let hub: ChangeHub;
  afterEach(() => hub.close());

  it('polls a database connector at its own interval, through the first table', async () => {
    const positions = new Map([['a', 1]]);
    const { connection, calls } = fakeConnection(positions);
    hub = new ChangeHub(50);
    let wakes = 0;
    hub.subscribe(
      'db',
      async () => connection,
      ['a', 'b'],
      () => (wakes += 1),
    );
    await sleep(330);
    expect(calls.probes).toBeGreaterThanOrEqual(5);
    positions.set('a', 2);
    await sleep(120);
    expect(wakes).toBeGreaterThan(0);
  });

  it('polls an app connector at the cadence it declares, and probes every table of its own', async () => {
    const positions = new Map([
      ['a', 1],
      ['b', 1],
    ]);
    const { connection, calls } = fakeConnection(positions, { intervalMs: 200, perTable: true });
    hub = new ChangeHub(50);
    let wakes = 0;
    hub.subscribe(
      'app',
      async () => connection,
      ['a', 'b'],
      () => (wakes += 1),
    );
    await sleep(500);
    // The first probe and two polls of two tables each: not one every 50 ms.
    expect(calls.probes).toBeLessThanOrEqual(6);
    expect(wakes).toBe(0);
    positions.set('b', 2);
    await sleep(300);
    expect(wakes).toBeGreaterThan(0);
  });
});
