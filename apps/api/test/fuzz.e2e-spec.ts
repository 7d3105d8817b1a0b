import { Agent, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { ERROR_CATALOG, isErrorCode } from '@lockstep/contracts';
import {
  describeRequest,
  systematicRequests,
  type FuzzFixtures,
  type FuzzRequest,
  type OpenApiOperation,
  operationKey,
  operationsOf,
  requestsFor,
} from './support/fuzz';
import { mysqlDestination, pgSource } from './support/live-export';
import { scratchMysql, scratchPg, type ScratchMysql, type ScratchPg } from './support/scratch-dbs';
import { bearer, createTestApp, type TestApp } from './support/test-app';

/**
 * Issue 31: property-based fuzzing of every operation of the served OpenAPI document with bad input. No
 * response is a 5xx, and every 4xx carries the spec's error shape (7.1) with a code whose catalogued status
 * is the one answered. The seed is printed; `FUZZ_SEED=<n>` replays a run, `FUZZ_RUNS` and `FUZZ_TIME_MS`
 * change its size and time budget, `FUZZ_ONLY='PUT /sync/syncs/{sync_id}/mappings'` narrows it to one
 * operation.
 */
const SEED = Number(process.env['FUZZ_SEED'] ?? 31_2026);
const RUNS = Number(process.env['FUZZ_RUNS'] ?? 40);
const TIME_MS = Number(process.env['FUZZ_TIME_MS'] ?? 60_000);
const ONLY = process.env['FUZZ_ONLY'];
const ERROR_TYPES = [
  'authentication_error',
  'permission_error',
  'invalid_request_error',
  'requires_action',
  'rate_limit_error',
  'api_error',
];

interface Answer {
  status: number;
  contentType: string;
  text: string;
}

/** Sends the request exactly as built (no client-side encoding or serialisation). */
function send(port: number, agent: Agent, request: FuzzRequest): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers = {
      ...request.headers,
      ...(request.body ? { 'content-length': String(request.body.length) } : {}),
    };
    const outgoing = httpRequest(
      { host: '127.0.0.1', port, agent, method: request.method, path: request.url, headers, timeout: 30_000 },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            contentType: String(response.headers['content-type'] ?? ''),
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        response.on('error', reject);
      },
    );
    outgoing.on('timeout', () => outgoing.destroy(new Error('no answer within 30 s')));
    outgoing.on('error', reject);
    outgoing.end(request.body ?? undefined);
  });
}

/** What is wrong with an answer, or null: a 5xx, or a 4xx without the spec's error shape and catalogued status. */
function problemWith(answer: Answer): string | null {
  if (answer.status >= 500) return `a ${answer.status}`;
  if (answer.status < 400) return null;
  let body: { error?: Record<string, unknown> };
  try {
    body = JSON.parse(answer.text);
  } catch {
    return `a ${answer.status} whose body is not JSON`;
  }
  const error = body.error;
  if (!error || typeof error.message !== 'string' || typeof error.doc_url !== 'string')
    return `a ${answer.status} without the error shape`;
  if (!ERROR_TYPES.includes(String(error.type)))
    return `a ${answer.status} with error type ${String(error.type)}`;
  if (typeof error.code !== 'string' || !isErrorCode(error.code))
    return `a ${answer.status} with unknown code ${String(error.code)}`;
  const catalogued = ERROR_CATALOG[error.code];
  if (catalogued.status !== answer.status || catalogued.type !== error.type)
    return `a ${answer.status} ${error.type} for ${error.code}, catalogued as ${catalogued.status} ${catalogued.type}`;
  return null;
}

describe('fuzzing every operation of the served OpenAPI document', () => {
  let t: TestApp;
  let pg: ScratchPg;
  let my: ScratchMysql;
  let port: number;
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  let key: string;
  const ids = { sync: '', liveExport: '' };

  const mappings = {
    tables: [
      {
        left_table: 'people',
        right_table: { create: { name: 'people_copy' } },
        direction: 'left_to_right',
        fields: [{ left_field: 'name', right_field: { create: { name: 'full_name' } } }],
      },
    ],
  };
  const exportMappings = {
    tables: [
      {
        source_table: 'people',
        destination_table: 'people_export',
        fields: [{ source_field: 'id', primary: true }, { source_field: 'name' }],
      },
    ],
  };
  const syncBody = () => ({
    name: 'fuzz',
    left: pgSource(pg),
    right: { connector: 'mysql', auth: { connectionString: my.url }, base: my.database },
  });
  const exportBody = () => ({ name: 'fuzz', source: pgSource(pg), destination: mysqlDestination(my) });

  /** The sync and the live export every operation is pointed at, created again when a DELETE removed them. */
  async function ensureResources(): Promise<void> {
    if (!ids.sync || (await t.http().get(`/v1/sync/syncs/${ids.sync}`).set(bearer(key))).status === 404) {
      ids.sync = (
        await t.http().post('/v1/sync/syncs').set(bearer(key)).send(syncBody()).expect(201)
      ).body.id;
    }
    if (
      !ids.liveExport ||
      (await t.http().get(`/v1/live-export/live-exports/${ids.liveExport}`).set(bearer(key))).status === 404
    ) {
      ids.liveExport = (
        await t.http().post('/v1/live-export/live-exports').set(bearer(key)).send(exportBody()).expect(201)
      ).body.id;
    }
  }

  function fixtures(path: string): FuzzFixtures {
    const onExports = path.startsWith('/live-export/');
    return {
      apiKey: key,
      pathValues: {
        id: [onExports ? ids.liveExport : ids.sync],
        sync_id: [ids.sync],
        side: ['left', 'right'],
        table_id: ['people', 'contacts'],
        table: ['people'],
      },
      queryValues: {
        sync: [ids.sync],
        live_export: [ids.liveExport],
        side: ['left', 'right'],
        refresh: ['true', 'false'],
        limit: ['1', '25', '100', '0', '101'],
        table: ['people', 'contacts'],
        query: ['alice', '1'],
        since: ['2026-01-01T00:00:00Z'],
        state: ['awaiting_review', 'ignored'],
      },
      bodies: {
        'POST /sync/syncs': [syncBody()],
        'PATCH /sync/syncs/{id}': [{ name: 'renamed', left: { auth: { connectionString: pg.url } } }],
        'PUT /sync/syncs/{sync_id}/mappings': [mappings],
        'POST /sync/syncs/{sync_id}/validate': [{ mappings }],
        'POST /sync/records/{record_id}/refetch': [{ side: 'left' }],
        'POST /live-export/live-exports': [exportBody()],
        'PATCH /live-export/live-exports/{id}': [{ name: 'renamed', destination: { location: my.database } }],
        'PUT /live-export/live-exports/{id}/mappings': [exportMappings],
        'POST /live-export/live-exports/{id}/mappings/validate': [exportMappings],
        'PATCH /live-export/live-exports/{id}/schedule': [
          { cadence: 'daily', enabled: true, time_of_day: '06:30', timezone: 'Europe/Paris' },
        ],
        'POST /live-export/live-exports/{id}/trigger': [{ force: true }],
      },
    };
  }

  beforeAll(async () => {
    t = await createTestApp({}, []);
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as AddressInfo).port;
    pg = await scratchPg('CREATE TABLE people (id serial PRIMARY KEY, name text)');
    my = await scratchMysql([
      'CREATE TABLE contacts (id int AUTO_INCREMENT PRIMARY KEY, full_name varchar(100))',
    ]);
    key = await t.key((await t.account({ plan: 'business' })).id, 'readwrite');
  });
  afterAll(async () => {
    agent.destroy();
    await Promise.all([pg?.drop(), my?.drop()]);
    await t?.close();
  });

  it(
    'answers no request with a 5xx and every 4xx in the spec error shape',
    async () => {
      const document = (await t.http().get('/v1/openapi.json').expect(200)).body;
      const components = document.components.schemas;
      const operations = operationsOf(document).filter(
        (operation) => !ONLY || operationKey(operation) === ONLY,
      );
      expect(operations.length).toBeGreaterThan(ONLY ? 0 : 40);
      process.stdout.write(
        `fuzz: seed ${SEED} (replay with FUZZ_SEED=${SEED}), ${operations.length} operations, up to ${RUNS} requests each, ${TIME_MS} ms\n`,
      );
      const startedAll = Date.now();
      const deadline = startedAll + TIME_MS;
      let sent = 0;
      const answers = new Map<string, number>();
      const check = async (operation: OpenApiOperation, request: FuzzRequest) => {
        sent += 1;
        const answer = await send(port, agent, request).catch((error: Error) => ({
          status: 599,
          contentType: '',
          text: `transport error: ${error.message}`,
        }));
        const label = `${answer.status} ${/"code":"(\w+)"/.exec(answer.text)?.[1] ?? ''}`.trim();
        answers.set(label, (answers.get(label) ?? 0) + 1);
        const problem = problemWith(answer);
        if (problem)
          throw new Error(
            `${operationKey(operation)} answered ${problem}:\n${describeRequest(request)}\n  answer: ${answer.status} ${answer.text.slice(0, 800)}`,
          );
      };
      const timings: { key: string; requests: number; ms: number }[] = [];
      for (const [index, operation] of operations.entries()) {
        await ensureResources();
        const started = Date.now();
        const before = sent;
        for (const request of systematicRequests(operation, fixtures(operation.path)))
          await check(operation, request);
        // As many random requests as the remaining time allows at the pace so far (at least 5, at most RUNS).
        const pace = (Date.now() - startedAll) / Math.max(1, sent);
        const budget = (deadline - Date.now()) / (operations.length - index);
        const numRuns = Math.max(5, Math.min(RUNS, Math.floor(budget / pace)));
        const property = fc.asyncProperty(
          requestsFor(operation, fixtures(operation.path), components),
          (request) => check(operation, request),
        );
        await fc.assert(property, { seed: SEED + index, numRuns, endOnFailure: true });
        timings.push({ key: operationKey(operation), requests: sent - before, ms: Date.now() - started });
      }
      const slowest = timings.sort((a, b) => b.ms - a.ms).slice(0, 5);
      process.stdout.write(
        `fuzz: slowest operations: ${slowest.map((entry) => `${entry.key} ${entry.requests} requests ${entry.ms} ms`).join('; ')}\n`,
      );
      const tally = [...answers].sort((a, b) => b[1] - a[1]).map(([label, count]) => `${label} x${count}`);
      process.stdout.write(`fuzz: ${sent} requests, no 5xx; answers: ${tally.join(', ')}\n`);
    },
    TIME_MS + 120_000,
  );
});
