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
    // Only the wake once the watch was up.
    expect(wakes).toBe(1);
    positions.set('b', 2);
    await sleep(300);
    expect(wakes).toBeGreaterThan(0);
  });
});

describe('ChangeHub: a subscriber is woken once its tables are watched', () => {
  let hub: ChangeHub;
  afterEach(() => hub.close());

  it('polling: a change committed before the first probe is read (the runner is woken after the probe)', async () => {
    const positions = new Map([['a', 1]]);
    const { connection } = fakeConnection(positions);
    hub = new ChangeHub(50);
    const wakes: number[] = [];
    let opened: () => void = () => undefined;
    const open = new Promise<void>((resolve) => (opened = resolve));
    hub.subscribe(
      'db',
      async () => {
        await open;
        return connection;
      },
      ['a'],
      () => wakes.push(Date.now()),
    );
    // The change lands after the runner's read and before the hub's first probe: that probe sees it as
    // "now", so no poll would ever report it.
    positions.set('a', 2);
    opened();
    await sleep(200);
    expect(wakes.length).toBe(1);
  });

  it('listening: the wake comes after the listener is up, not before', async () => {
    let listening = 0;
    let finishListen: () => void = () => undefined;
    const connection = {
      type: 'fake',
      currentCheckpoint: async () => '0',
      watch: async () => {
        await new Promise<void>((resolve) => (finishListen = resolve));
        listening = Date.now();
        return async () => undefined;
      },
      close: async () => undefined,
    } as unknown as Connection;
    hub = new ChangeHub(50);
    const wakes: number[] = [];
    hub.subscribe(
      'db',
      async () => connection,
      ['a'],
      () => wakes.push(Date.now()),
    );
    await sleep(100);
    expect(wakes).toEqual([]);
    finishListen();
    await sleep(20);
    expect(wakes).toHaveLength(1);
    expect(wakes[0]!).toBeGreaterThanOrEqual(listening);
  });

  it('a second subscriber with other tables is woken once the listener covers them too', async () => {
    const watched: string[][] = [];
    const connection = {
      type: 'fake',
      currentCheckpoint: async () => '0',
      watch: async (tables: string[]) => {
        await sleep(30);
        watched.push(tables);
        return async () => undefined;
      },
      close: async () => undefined,
    } as unknown as Connection;
    hub = new ChangeHub(50);
    let first = 0;
    let second = 0;
    hub.subscribe(
      'db',
      async () => connection,
      ['a'],
      () => (first += 1),
    );
    hub.subscribe(
      'db',
      async () => connection,
      ['b'],
      () => (second += 1),
    );
    await sleep(150);
    // Refreshes run one after the other: the first listen covers both tables, the second finds it done.
    expect(watched).toEqual([['a', 'b']]);
    expect(first).toBe(1);
    expect(second).toBe(1);
  });
});
