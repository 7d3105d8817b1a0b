/**
 * Connector benchmark (`tools/bench/connectors/run.sh`, see README.md): rows per second of a full read and
 * of a bulk write of an N-row, 10-column table through each connector, next to the same machine's native
 * tools on the same data, as ratios; and the benchmark process's peak RSS while the connectors run.
 *
 * Targets (from the issue): connector read >= 50% and connector write >= 30% of the native figures; peak RSS
 * under 300 MB whatever the table size. It prints figures; it is not a test (it exits 0 when the targets are
 * missed, 1 only when something failed to run).
 */
import { benchArgs } from '../common/args';
import { spawn } from 'node:child_process';
import { cpus } from 'node:os';
import { createInterface } from 'node:readline';
import { DEFAULT_EGRESS_POLICY, type Connection } from '@lockstep/connectors-core';
import { CONNECTOR_TARGET_TABLE, SOURCE_TABLE } from './dataset';
import { RssSampler, connectorRead, connectorWrite, type ReadResult, type WriteResult } from './measure';
import { mariadbTarget, postgresTarget, type BenchTarget } from './targets';

const READ_TARGET = 0.5;
const WRITE_TARGET = 0.3;
const RSS_BOUND = 300 * 1024 * 1024;

interface Options {
  rows: number;
  pageSize: number;
  batchSize: number;
  repeat: number;
  only: string[];
  changeCapture: boolean;
  /** Internal: run one connector and report its figures as one JSON line to the parent process. */
  child: boolean;
  pgUrl: string;
  mysqlUrl: string;
}

const USAGE = `usage: run.sh [--rows N] [--page-size N] [--batch-size N] [--repeat N] [--only postgres,mysql]
              [--change-capture] [--pg-url URL] [--mysql-url URL]
  --rows N          rows in the table (default 200000)
  --page-size N     readPage page size (default 5000)
  --batch-size N    rows per createRecords call (default 1000)
  --repeat N        run every measurement N times and keep the best (default 1)
  --only LIST       connectors to run (default postgres,mysql)
  --change-capture  prepare the connector's target table with change capture (triggers) before writing
  --pg-url URL      PostgreSQL admin URL (default $BENCH_PG_URL or postgres://postgres@127.0.0.1:5432/postgres)
  --mysql-url URL   MariaDB admin URL (default $BENCH_MYSQL_URL or mysql://root@127.0.0.1:3306)`;

function parseOptions(argv: string[]): Options {
  const args = benchArgs(
    argv,
    {
      rows: { type: 'string' },
      'page-size': { type: 'string' },
      'batch-size': { type: 'string' },
      repeat: { type: 'string' },
      only: { type: 'string' },
      'change-capture': { type: 'boolean' },
      child: { type: 'boolean' },
      'pg-url': { type: 'string' },
      'mysql-url': { type: 'string' },
    },
    USAGE,
  );
  const options: Options = {
    rows: args.count('rows', 200_000),
    pageSize: args.count('page-size', 5_000),
    batchSize: args.count('batch-size', 1_000),
    repeat: args.count('repeat', 1),
    only: args.list('only', ['postgres', 'mysql'], ['postgres', 'mysql']),
    changeCapture: args.flag('change-capture'),
    child: args.flag('child'),
    pgUrl: args.text('pg-url', process.env.BENCH_PG_URL || 'postgres://postgres@127.0.0.1:5432/postgres'),
    mysqlUrl: args.text('mysql-url', process.env.BENCH_MYSQL_URL || 'mysql://root@127.0.0.1:3306'),
  };
  return options;
}

interface Figures {
  connector: string;
  server: string;
  rows: number;
  nativeRead: { seconds: number; rowsPerSecond: number } | null;
  nativeWrite: { seconds: number; rowsPerSecond: number } | null;
  connectorRead: (ReadResult & { rowsPerSecond: number }) | null;
  connectorWrite: (WriteResult & { rowsPerSecond: number }) | null;
  readRatio: number | null;
  writeRatio: number | null;
  /** The written table has exactly the source's rows and values. */
  writtenMatchesSource: boolean | null;
  peakRssBytes: number | null;
  baselineRssBytes: number | null;
  /** Max RSS of the process that ran this connector, over its whole life (getrusage). */
  processMaxRssBytes: number | null;
  errors: string[];
}

const say = (line = '') => process.stdout.write(`${line}\n`);
const int = (n: number) => Math.round(n).toLocaleString('en-US');
const secs = (s: number) => `${s.toFixed(2)} s`;
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
const pct = (ratio: number | null) => (ratio === null ? 'n/a' : `${(ratio * 100).toFixed(1)}%`);
const verdict = (ratio: number | null, target: number) =>
  ratio === null ? '' : ratio >= target ? 'ok' : 'BELOW TARGET';
const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

async function best<T extends { seconds: number }>(repeat: number, run: () => Promise<T>): Promise<T> {
  let result: T | null = null;
  for (let attempt = 0; attempt < repeat; attempt += 1) {
    const next = await run();
    if (result === null || next.seconds < result.seconds) result = next;
  }
  return result as T;
}

async function tableId(connection: Connection, name: string): Promise<string> {
  const tables = await connection.listTables();
  const table = tables.find((info) => info.name === name || info.remoteId === name);
  if (!table)
    throw new Error(
      `listTables() does not list ${name} (got: ${tables.map((info) => info.name).join(', ')})`,
    );
  return table.remoteId;
}

async function benchTarget(target: BenchTarget, options: Options): Promise<Figures> {
  const { rows } = options;
  const figures: Figures = {
    connector: target.name,
    server: target.server,
    rows,
    nativeRead: null,
    nativeWrite: null,
    connectorRead: null,
    connectorWrite: null,
    readRatio: null,
    writeRatio: null,
    writtenMatchesSource: null,
    peakRssBytes: null,
    baselineRssBytes: null,
    processMaxRssBytes: null,
    errors: [],
  };
  say();
  say(`== ${target.name} ==`);
  const setupStarted = Date.now();
  await target.setup(rows);
  figures.server = target.server;
  say(
    `  ${target.server}: throw-away database ready, ${int(rows)} source rows generated in ${secs((Date.now() - setupStarted) / 1000)}`,
  );

  // Native figures (child processes; not part of the benchmark's RSS).
  try {
    const read = await best(options.repeat, async () => ({ seconds: await target.timeNativeRead() }));
    figures.nativeRead = { seconds: read.seconds, rowsPerSecond: rows / read.seconds };
    say(
      `  native read      ${secs(read.seconds).padStart(9)}  ${int(rows / read.seconds).padStart(10)} rows/s   ${target.nativeRead}`,
    );
  } catch (error) {
    figures.errors.push(`native read: ${message(error)}`);
    say(`  native read      FAILED: ${message(error)}`);
  }
  try {
    const write = await best(options.repeat, async () => {
      const seconds = await target.timeNativeWrite();
      const copied = await target.nativeTargetRows();
      if (copied !== rows) throw new Error(`the native pipeline loaded ${copied} rows, not ${rows}`);
      return { seconds };
    });
    figures.nativeWrite = { seconds: write.seconds, rowsPerSecond: rows / write.seconds };
    say(
      `  native write     ${secs(write.seconds).padStart(9)}  ${int(rows / write.seconds).padStart(10)} rows/s   ${target.nativeWrite}`,
    );
  } catch (error) {
    figures.errors.push(`native write: ${message(error)}`);
    say(`  native write     FAILED: ${message(error)}`);
  }

  // Connector figures, in this process.
  const sampler = new RssSampler(100);
  let connection: Connection | null = null;
  try {
    connection = await target.declaration.connect(target.credentials, target.base, {
      egress: DEFAULT_EGRESS_POLICY,
    });
    const source = await tableId(connection, SOURCE_TABLE);
    const destination = await tableId(connection, CONNECTOR_TARGET_TABLE);
    const prepared = await connection.prepareTable(destination, { changeCapture: options.changeCapture });
    if (prepared.serviceIdField !== null)
      say(`  note: prepareTable added a service id column (${prepared.serviceIdField}) to the target table`);
    figures.baselineRssBytes = process.memoryUsage.rss();
    sampler.start();

    try {
      const read = await best(options.repeat, () =>
        connectorRead(connection as Connection, source, options.pageSize, sampler),
      );
      if (read.rows !== rows)
        figures.errors.push(`connector read: readPage returned ${read.rows} rows, not ${rows}`);
      figures.connectorRead = { ...read, rowsPerSecond: read.rows / read.seconds };
      say(
        `  connector read   ${secs(read.seconds).padStart(9)}  ${int(read.rows / read.seconds).padStart(10)} rows/s   ` +
          `readPage: ${int(read.rows)} rows in ${read.pages} pages of ${int(options.pageSize)} (slowest page ${read.maxPageMs.toFixed(0)} ms)`,
      );
    } catch (error) {
      figures.errors.push(`connector read: ${message(error)}`);
      say(`  connector read   FAILED: ${message(error)}`);
    }

    try {
      const write = await best(options.repeat, async () => {
        await target.resetConnectorTarget();
        return connectorWrite(connection as Connection, destination, rows, options.batchSize, sampler);
      });
      figures.connectorWrite = { ...write, rowsPerSecond: write.rows / write.seconds };
      say(
        `  connector write  ${secs(write.seconds).padStart(9)}  ${int(write.rows / write.seconds).padStart(10)} rows/s   ` +
          `createRecords: ${int(write.rows)} rows in batches of ${int(options.batchSize)} (${secs(write.callSeconds)} inside createRecords)`,
      );
      if (write.failed > 0) {
        figures.errors.push(`connector write: ${write.failed} rows refused, first: ${write.firstError}`);
        say(`  connector write: ${int(write.failed)} rows refused; first: ${write.firstError}`);
      }
      const [expected, written] = [
        await target.summary(SOURCE_TABLE),
        await target.summary(CONNECTOR_TARGET_TABLE),
      ];
      figures.writtenMatchesSource = expected.rows === written.rows && expected.checksum === written.checksum;
      say(
        `  written table vs source: ${written.rows === expected.rows ? 'same row count' : `${written.rows} rows, source has ${expected.rows}`}, ` +
          `${written.checksum === expected.checksum ? 'same checksum (identical values)' : 'DIFFERENT checksum (values differ)'}`,
      );
      if (!figures.writtenMatchesSource)
        figures.errors.push('connector write: the written rows differ from the source rows');
    } catch (error) {
      figures.errors.push(`connector write: ${message(error)}`);
      say(`  connector write  FAILED: ${message(error)}`);
    }
  } catch (error) {
    figures.errors.push(`connector: ${message(error)}`);
    say(`  connector        FAILED: ${message(error)}`);
  } finally {
    const peak = sampler.stop();
    if (figures.baselineRssBytes !== null) figures.peakRssBytes = peak;
    if (connection)
      await connection.close().catch((error: unknown) => figures.errors.push(`close: ${message(error)}`));
  }
  if (figures.peakRssBytes !== null && figures.baselineRssBytes !== null) {
    say(
      `  peak RSS while the connector ran: ${mb(figures.peakRssBytes)} (${mb(figures.baselineRssBytes)} before it started; bound ${mb(RSS_BOUND)})`,
    );
  }

  if (figures.nativeRead && figures.connectorRead)
    figures.readRatio = figures.connectorRead.rowsPerSecond / figures.nativeRead.rowsPerSecond;
  if (figures.nativeWrite && figures.connectorWrite)
    figures.writeRatio = figures.connectorWrite.rowsPerSecond / figures.nativeWrite.rowsPerSecond;
  return figures;
}

function printSummary(all: Figures[], options: Options): void {
  const header = [
    'connector',
    'native read/s',
    'conn. read/s',
    'read ratio',
    '(>=50%)',
    'native write/s',
    'conn. write/s',
    'write ratio',
    '(>=30%)',
    'peak RSS',
    'proc. max RSS',
    '(<300 MB)',
  ];
  const rows = all.map((f) => [
    f.connector,
    f.nativeRead ? int(f.nativeRead.rowsPerSecond) : 'n/a',
    f.connectorRead ? int(f.connectorRead.rowsPerSecond) : 'n/a',
    pct(f.readRatio),
    verdict(f.readRatio, READ_TARGET),
    f.nativeWrite ? int(f.nativeWrite.rowsPerSecond) : 'n/a',
    f.connectorWrite ? int(f.connectorWrite.rowsPerSecond) : 'n/a',
    pct(f.writeRatio),
    verdict(f.writeRatio, WRITE_TARGET),
    f.peakRssBytes === null ? 'n/a' : mb(f.peakRssBytes),
    f.processMaxRssBytes === null ? 'n/a' : mb(f.processMaxRssBytes),
    f.peakRssBytes === null
      ? ''
      : Math.max(f.peakRssBytes, f.processMaxRssBytes ?? 0) < RSS_BOUND
        ? 'ok'
        : 'OVER BOUND',
  ]);
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column].length)),
  );
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[column]) : cell.padStart(widths[column])))
      .join('  ');
  say();
  say(`== summary: ${int(options.rows)} rows x 10 columns (rows per second; ratio = connector / native) ==`);
  say(line(header));
  say(line(widths.map((width) => '-'.repeat(width))));
  for (const row of rows) say(line(row));
  say(
    'peak RSS: sampled every 100 ms while the connector read and wrote; proc. max RSS: getrusage max of the process that ran it',
  );
  for (const f of all) for (const error of f.errors) say(`! ${f.connector}: ${error}`);
}

/** Runs the targets in this process; returns their figures and whether one failed before measuring. */
async function runInProcess(options: Options): Promise<{ all: Figures[]; failed: boolean }> {
  const targets: BenchTarget[] = [];
  if (options.only.includes('postgres')) targets.push(postgresTarget(options.pgUrl));
  if (options.only.includes('mysql')) targets.push(mariadbTarget(options.mysqlUrl));

  let interrupted = false;
  const onSignal = () => {
    if (interrupted) process.exit(130);
    interrupted = true;
    say('\ninterrupted: dropping the throw-away databases...');
    void Promise.allSettled(targets.map((target) => target.teardown())).then(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const all: Figures[] = [];
  let failed = false;
  for (const target of targets) {
    try {
      all.push(await benchTarget(target, options));
    } catch (error) {
      failed = true;
      say(`  ${target.name}: FAILED before measuring: ${message(error)}`);
    } finally {
      await target
        .teardown()
        .catch((error: unknown) => say(`  ${target.name}: cleanup failed: ${message(error)}`));
    }
  }
  const processMaxRss = process.resourceUsage().maxRSS * 1024;
  for (const figures of all) figures.processMaxRssBytes = processMaxRss;
  return { all, failed };
}

const CHILD_FIGURES = 'BENCH_CHILD_FIGURES ';

/**
 * Runs one connector in a child process (this same script with `--child --only NAME`), so each connector's
 * RSS is its own and not what the previous connector left on the heap. The child's lines are passed through.
 */
function runInChild(name: string): Promise<{ all: Figures[]; failed: boolean }> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [...process.execArgv, __filename, ...process.argv.slice(2), '--only', name, '--child'],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let result: { all: Figures[]; failed: boolean } = { all: [], failed: true };
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.startsWith(CHILD_FIGURES))
        result = JSON.parse(line.slice(CHILD_FIGURES.length)) as typeof result;
      else say(line);
    });
    child.on('close', (code) => {
      if (code !== 0 && result.all.length === 0)
        say(`  ${name}: the benchmark process exited with code ${code}`);
      resolve(code === 0 || result.all.length > 0 ? result : { all: [], failed: true });
    });
  });
}

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2));
  if (options.child) {
    say(CHILD_FIGURES + JSON.stringify(await runInProcess(options)));
    return 0;
  }
  say(
    `Lockstep connector benchmark: ${int(options.rows)} rows x 10 columns; readPage page size ${int(options.pageSize)}, ` +
      `createRecords batch ${int(options.batchSize)}, best of ${options.repeat}${options.changeCapture ? ', change capture on' : ''}`,
  );
  say(
    `node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model.trim() ?? 'unknown'}), ${process.platform} ${process.arch}`,
  );

  let all: Figures[] = [];
  let failed = false;
  if (options.only.length === 1) {
    ({ all, failed } = await runInProcess(options));
  } else {
    // The children handle Ctrl-C themselves (they drop their databases); this process just waits for them.
    process.on('SIGINT', () => undefined);
    for (const name of options.only) {
      const result = await runInChild(name);
      all = all.concat(result.all);
      failed ||= result.failed;
    }
  }
  printSummary(all, options);
  say(
    JSON.stringify({
      bench: 'connectors',
      rows: options.rows,
      pageSize: options.pageSize,
      batchSize: options.batchSize,
      repeat: options.repeat,
      changeCapture: options.changeCapture,
      targets: { readRatio: READ_TARGET, writeRatio: WRITE_TARGET, rssBytes: RSS_BOUND },
      results: all,
    }),
  );
  return failed || all.some((f) => f.errors.length > 0) ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${message(error)}\n`);
    process.exit(1);
  },
);
