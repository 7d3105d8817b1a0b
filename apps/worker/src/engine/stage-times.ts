/**
 * Where an initial sync pass's wall time goes (the engine benchmark prints it; `ENGINE_STAGE_TIMES_FILE`).
 *
 * A pass has one loop in the foreground (read the page, decide it, hand it on) and, per page, its app writes
 * and its store commit in the background, overlapping the loop and each other. So the figures are of two
 * kinds:
 * - the loop's own time, split in the parts it waits or works (they add up to the loop's wall time):
 *   `read_wait` (the page was not read ahead yet), `decide` (link lookups, observing, merging: the worker's
 *   code, plus whatever background callbacks ran meanwhile on the same thread), `pipeline_wait` (every page
 *   slot was busy: it waited for the oldest page's writes and commit), `other` (skipped ids, statistics);
 * - how long each background resource was busy (at least one call in progress), as a union of intervals:
 *   `write_target` (the target app's create and update calls, queued on the side's connection included),
 *   `store` (a page's store transaction, from its first statement to its commit, minus the time it waits for
 *   the previous page's commit), `commit_order_wait` (that waiting).
 * The event loop's utilisation over the pass tells how long the worker's one thread was not idle (on a busy
 * machine that includes waiting for a core); its CPU time, how much of that it actually ran.
 *
 * Nothing here changes what the engine does; it is a handful of clock reads per page.
 */
import { writeFile } from 'node:fs/promises';
import { performance, type EventLoopUtilization } from 'node:perf_hooks';

export type LoopPart = 'read_wait' | 'decide' | 'pipeline_wait' | 'other';
export type Resource = 'write_target' | 'store' | 'commit_order_wait';

/** The union of the intervals during which at least one holder was in: how long a resource was busy. */
class Busy {
  private inside = 0;
  private since = 0;
  total = 0;

  enter(): void {
    if (this.inside++ === 0) this.since = performance.now();
  }

  exit(): void {
    if (--this.inside === 0) this.total += performance.now() - this.since;
  }
}

export class PassTimes {
  readonly loop: Record<LoopPart, number> = { read_wait: 0, decide: 0, pipeline_wait: 0, other: 0 };
  private readonly busy: Record<Resource, Busy> = {
    write_target: new Busy(),
    store: new Busy(),
    commit_order_wait: new Busy(),
  };
  wall = 0;
  rows = 0;
  private elu: EventLoopUtilization | null = null;
  private eluSum = { active: 0, idle: 0 };
  private stepStart = 0;
  private cpuStart: NodeJS.CpuUsage | null = null;
  /** The worker process's CPU time during the pass's steps (all of its work, background included). */
  cpu = 0;

  /** Starts a step of the pass (the wall clock runs only within steps). */
  startStep(): void {
    this.stepStart = performance.now();
    this.elu = performance.eventLoopUtilization();
    this.cpuStart = process.cpuUsage();
  }

  endStep(): void {
    this.wall += performance.now() - this.stepStart;
    if (this.elu) {
      const delta = performance.eventLoopUtilization(this.elu);
      this.eluSum.active += delta.active;
      this.eluSum.idle += delta.idle;
    }
    if (this.cpuStart) {
      const used = process.cpuUsage(this.cpuStart);
      this.cpu += (used.user + used.system) / 1000;
    }
  }

  /** Adds the time since `from` (a `performance.now()`) to a loop part; returns now. */
  lap(part: LoopPart, from: number): number {
    const now = performance.now();
    this.loop[part] += now - from;
    return now;
  }

  /** Runs `work` with `resource` marked busy. */
  async during<T>(resource: Resource, work: () => Promise<T>): Promise<T> {
    this.busy[resource].enter();
    try {
      return await work();
    } finally {
      this.busy[resource].exit();
    }
  }

  /** A page's store transaction starts working (or resumes after waiting for the previous page's commit). */
  enterStore(): void {
    this.busy.store.enter();
  }

  exitStore(): void {
    this.busy.store.exit();
  }

  toJSON(): Record<string, unknown> {
    const seconds = (ms: number) => Math.round(ms) / 1000;
    const total = this.eluSum.active + this.eluSum.idle;
    return {
      rows: this.rows,
      wall_s: seconds(this.wall),
      cpu_s: seconds(this.cpu),
      loop_s: Object.fromEntries(Object.entries(this.loop).map(([part, ms]) => [part, seconds(ms)])),
      busy_s: Object.fromEntries(
        Object.entries(this.busy).map(([name, busy]) => [name, seconds(busy.total)]),
      ),
      event_loop_utilization: total > 0 ? Math.round((this.eluSum.active / total) * 1000) / 1000 : null,
    };
  }
}

const passes = new Map<string, PassTimes>();
let file: string | null = null;

/** Where the figures go (none: they are still kept, and cost nothing worth naming). */
export function configureStageTimes(path: string | undefined): void {
  file = path || null;
}

/** The figures of one pass (`sync:pair:side`), kept for the life of the process while a file is configured. */
export function passTimes(syncId: string, pair: number, side: string): PassTimes | null {
  if (!file) return null;
  const key = `${syncId}:${pair}:${side}`;
  let times = passes.get(key);
  if (!times) passes.set(key, (times = new PassTimes()));
  return times;
}

/** Writes every pass's figures to the configured file (a JSON object by pass), replacing it. */
export async function flushStageTimes(): Promise<void> {
  if (!file) return;
  await writeFile(file, JSON.stringify(Object.fromEntries(passes))).catch(() => undefined);
}
