/**
 * Where an initial sync pass's wall time went, as the worker wrote it to `ENGINE_STAGE_TIMES_FILE`
 * (apps/worker/src/engine/stage-times.ts): the pass loop's parts, which add up to its wall time, and how long
 * each background resource (the target's writes, the store's commits) was busy.
 */
import { readFile, rm } from 'node:fs/promises';

const pct = (ratio: number) => `${(ratio * 100).toFixed(1)}%`;
const int = (n: number) => Math.round(n).toLocaleString('en-US');

/** What the worker wrote to ENGINE_STAGE_TIMES_FILE: per pass (sync:pair:side), see stage-times.ts. */
export type StageTimes = Record<
  string,
  {
    rows: number;
    wall_s: number;
    cpu_s: number;
    loop_s: Record<string, number>;
    busy_s: Record<string, number>;
    event_loop_utilization: number | null;
  }
>;

export async function readStageTimes(file: string): Promise<StageTimes> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as StageTimes;
  } catch {
    return {};
  } finally {
    await rm(file, { force: true });
  }
}

/** Where each pass's wall time went: the loop's parts (they add up) and each background resource's busy time. */
export function stageLines(stages: StageTimes): string[] {
  const lines: string[] = [];
  for (const [key, pass] of Object.entries(stages)) {
    if (pass.rows === 0) continue;
    const share = (s: number) => `${s.toFixed(2)} s (${pct(s / pass.wall_s)})`;
    const side = key.split(':').at(-1);
    lines.push(
      `    wall time of the ${side} pass (${int(pass.rows)} rows, ${pass.wall_s.toFixed(2)} s; the worker's event loop not idle ${pass.event_loop_utilization === null ? '?' : pct(pass.event_loop_utilization)}, its CPU ${share(pass.cpu_s)}):`,
      `      loop: read wait ${share(pass.loop_s['read_wait'] ?? 0)}, decide ${share(pass.loop_s['decide'] ?? 0)}, waiting for a page slot ${share(pass.loop_s['pipeline_wait'] ?? 0)}, other ${share(pass.loop_s['other'] ?? 0)}`,
      `      busy in the background: target writes ${share(pass.busy_s['write_target'] ?? 0)}, store commits ${share(pass.busy_s['store'] ?? 0)}, a commit waiting for the one before ${share(pass.busy_s['commit_order_wait'] ?? 0)}`,
    );
  }
  return lines;
}
