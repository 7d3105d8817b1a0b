/**
 * Wakes runners when their tables change, with one watcher per app database shared by every sync on it:
 * PostgreSQL through LISTEN/NOTIFY (the connector's `watch`), others by polling the change log's
 * checkpoint once a second. Two hundred idle syncs on one database cost one listener (or one query a second).
 * An app connector declares its own cadence (`Connection.checkpointPolling`): its requests come out of a
 * rate budget that writes need, and each of its tables may keep a checkpoint of its own.
 */
import type { Connection } from '@lockstep/connectors-core';
import { Logger } from '@nestjs/common';

interface Subscriber {
  tables: Set<string>;
  wake: () => void;
}

interface Watch {
  open: () => Promise<Connection>;
  connection: Connection | null;
  subscribers: Map<number, Subscriber>;
  stop: (() => Promise<void>) | null;
  watchedTables: string;
  timer: NodeJS.Timeout | null;
  last: string | null;
  busy: boolean;
  /** Refreshes of one watch run one after the other (each may open a connection or a listener). */
  refreshing: Promise<void>;
}

export class ChangeHub {
  private readonly logger = new Logger('ChangeHub');
  private readonly watches = new Map<string, Watch>();
  private nextId = 1;
  private closed = false;

  constructor(private readonly pollMs = 1000) {}

  /**
   * Subscribes to changes of `tables` in the database `key`; `open` makes a connection when the hub needs
   * one.
   */
  subscribe(key: string, open: () => Promise<Connection>, tables: string[], wake: () => void): () => void {
    let watch = this.watches.get(key);
    if (!watch) {
      watch = {
        open,
        connection: null,
        subscribers: new Map(),
        stop: null,
        watchedTables: '',
        timer: null,
        last: null,
        busy: false,
        refreshing: Promise.resolve(),
      };
      this.watches.set(key, watch);
    }
    const id = this.nextId++;
    watch.subscribers.set(id, { tables: new Set(tables), wake });
    // A change committed after the subscriber's last read but before the watch covers its tables (the
    // listener connecting, the first probe) wakes nobody, and the runner would sleep on it until its safety
    // poll: so the subscriber is woken once the watch covers its tables, and its next read finds the change.
    const current = watch;
    current.refreshing = current.refreshing
      .then(() => this.refresh(key, current))
      .then((watching) => {
        if (watching && current.subscribers.has(id)) wake();
      });
    return () => {
      const current = this.watches.get(key);
      if (!current) return;
      current.subscribers.delete(id);
      if (current.subscribers.size === 0) void this.dispose(key, current);
    };
  }

  /** Makes the watch cover every subscriber's tables; false when it could not (subscribers are woken). */
  private async refresh(key: string, watch: Watch): Promise<boolean> {
    if (this.closed || this.watches.get(key) !== watch) return false;
    try {
      watch.connection ??= await watch.open();
      const connection = watch.connection;
      const tables = [
        ...new Set([...watch.subscribers.values()].flatMap((subscriber) => [...subscriber.tables])),
      ].sort();
      if (connection.watch) {
        const signature = tables.join('\u0000');
        if (signature === watch.watchedTables && watch.stop) return true;
        const previous = watch.stop;
        watch.stop = await connection.watch(tables, (table) => {
          for (const subscriber of watch.subscribers.values())
            if (subscriber.tables.has(table)) subscriber.wake();
        });
        watch.watchedTables = signature;
        if (previous) await previous();
      } else if (!watch.timer) {
        const intervalMs = Math.max(this.pollMs, connection.checkpointPolling?.intervalMs ?? 0);
        watch.timer = setInterval(() => void this.poll(watch), intervalMs);
        watch.timer.unref();
        if (tables.length > 0) watch.last = await probe(connection, tables);
      }
      return true;
    } catch (error) {
      // The runners find out what is wrong themselves; wake them and try again shortly.
      this.logger.debug(
        { key: key.split('|')[0], error: error instanceof Error ? error.message : String(error) },
        'change watch failed',
      );
      for (const subscriber of watch.subscribers.values()) subscriber.wake();
      await watch.connection?.close().catch(() => undefined);
      watch.connection = null;
      watch.stop = null;
      setTimeout(() => {
        if (this.watches.get(key) === watch)
          watch.refreshing = watch.refreshing.then(async () => void (await this.refresh(key, watch)));
      }, 5000).unref();
      return false;
    }
  }

  private async poll(watch: Watch): Promise<void> {
    if (watch.busy || !watch.connection) return;
    watch.busy = true;
    try {
      const tables = [
        ...new Set([...watch.subscribers.values()].flatMap((subscriber) => [...subscriber.tables])),
      ].sort();
      if (tables.length === 0) return;
      const checkpoint = await probe(watch.connection, tables);
      // The checkpoint covers every watched table: any change wakes every subscriber.
      if (watch.last !== null && checkpoint !== watch.last)
        for (const subscriber of watch.subscribers.values()) subscriber.wake();
      watch.last = checkpoint;
    } catch {
      for (const subscriber of watch.subscribers.values()) subscriber.wake();
    } finally {
      watch.busy = false;
    }
  }

  private async dispose(key: string, watch: Watch): Promise<void> {
    this.watches.delete(key);
    if (watch.timer) clearInterval(watch.timer);
    if (watch.stop) await watch.stop().catch(() => undefined);
    await watch.connection?.close().catch(() => undefined);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const [key, watch] of [...this.watches]) await this.dispose(key, watch);
  }
}

/**
 * What stands for "now" in the watched tables: the first table's checkpoint (a database's change log covers
 * them all), or every table's, in order, for a connector whose tables keep checkpoints of their own.
 */
async function probe(connection: Connection, tables: string[]): Promise<string> {
  if (!connection.checkpointPolling?.perTable) return connection.currentCheckpoint(tables[0]!);
  const checkpoints: string[] = [];
  for (const table of tables) checkpoints.push(await connection.currentCheckpoint(table));
  return JSON.stringify(checkpoints);
}
