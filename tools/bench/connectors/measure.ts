/**
 * What the benchmark measures in its own process: a full read through `readPage`, a bulk write through
 * `createRecords`, and the resident set size while they run.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Connection, RecordCreate } from '@lockstep/connectors-core';
import { canonicalRow } from './dataset';

/** Samples `process.memoryUsage.rss()` every `intervalMs` while started; `stop()` returns the peak in bytes. */
export class RssSampler {
  private peak = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly intervalMs = 100) {}

  start(): void {
    this.peak = process.memoryUsage.rss();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
  }

  sample(): void {
    const rss = process.memoryUsage.rss();
    if (rss > this.peak) this.peak = rss;
  }

  stop(): number {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.sample();
    return this.peak;
  }
}

export interface ReadResult {
  rows: number;
  pages: number;
  seconds: number;
  /** Slowest single `readPage` call. */
  maxPageMs: number;
}

export async function connectorRead(
  connection: Connection,
  table: string,
  pageSize: number,
  sampler: RssSampler,
): Promise<ReadResult> {
  let after: string | null = null;
  let rows = 0;
  let pages = 0;
  let maxPageMs = 0;
  const started = performance.now();
  do {
    const pageStarted = performance.now();
    const page = await connection.readPage(table, { after, pageSize });
    maxPageMs = Math.max(maxPageMs, performance.now() - pageStarted);
    rows += page.records.length;
    pages += 1;
    after = page.next;
    sampler.sample();
  } while (after !== null);
  return { rows, pages, seconds: (performance.now() - started) / 1000, maxPageMs };
}

export interface WriteResult {
  rows: number;
  failed: number;
  /** The first refused row's error, if any. */
  firstError: string | null;
  seconds: number;
  /** Time spent inside `createRecords` (the rest is generating the rows and their service ids). */
  callSeconds: number;
}

/** Writes rows 1..total in batches of `batchSize`, each row generated just before its batch is sent. */
export async function connectorWrite(
  connection: Connection,
  table: string,
  total: number,
  batchSize: number,
  sampler: RssSampler,
): Promise<WriteResult> {
  let failed = 0;
  let written = 0;
  let firstError: string | null = null;
  let callMs = 0;
  const started = performance.now();
  for (let first = 1; first <= total; first += batchSize) {
    const last = Math.min(total, first + batchSize - 1);
    const batch: RecordCreate[] = [];
    for (let i = first; i <= last; i += 1) batch.push({ serviceId: randomUUID(), values: canonicalRow(i) });
    const callStarted = performance.now();
    const results = await connection.createRecords(table, batch);
    callMs += performance.now() - callStarted;
    if (results.length !== batch.length)
      throw new Error(`createRecords returned ${results.length} results for ${batch.length} rows`);
    for (const result of results) {
      if (result.ok) {
        written += 1;
      } else {
        failed += 1;
        firstError ??= `${result.error.kind}: ${result.error.message}`;
      }
    }
    sampler.sample();
  }
  return {
    rows: written,
    failed,
    firstError,
    seconds: (performance.now() - started) / 1000,
    callSeconds: callMs / 1000,
  };
}
