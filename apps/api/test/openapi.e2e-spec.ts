import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildClientDocument } from '../src/common/openapi/client-files';
import { createTestApp, type TestApp } from './support/test-app';

type Json = Record<string, unknown>;
type Schema = { properties?: Json };

/** The verbs an operationId may start with: each reads as a method name in a generated client. */
const VERBS = [
  'list',
  'get',
  'create',
  'update',
  'delete',
  'pause',
  'activate',
  'validate',
  'retry',
  'search',
  'refetch',
  'save',
  'trigger',
  'cancel',
];
/** Names a generated client would turn into a type that shadows a built-in one. */
const BUILT_IN_NAMES = [
  'Error',
  'Object',
  'String',
  'Number',
  'Boolean',
  'Array',
  'Date',
  'Function',
  'Symbol',
  'Promise',
  'Map',
  'Set',
  'Record',
  'Response',
  'Request',
  'Headers',
  'URL',
  'JSON',
  'RegExp',
];

function operationIds(doc: { paths: Record<string, Record<string, { operationId?: string }>> }): string[] {
  return Object.values(doc.paths).flatMap((item) =>
    Object.values(item).map((operation) => operation.operationId ?? '(none)'),
  );
}

/** Pairs `X`/`XDto` describing the same properties: one type under two names. */
function dtoTwins(schemas: Record<string, Schema>): string[] {
  const keys = (schema: Schema) => JSON.stringify(Object.keys(schema.properties ?? {}).sort());
  return Object.keys(schemas)
    .filter((name) => schemas[`${name}Dto`] && keys(schemas[name]!) === keys(schemas[`${name}Dto`]!))
    .map((name) => `${name}/${name}Dto`);
}

function redoclyLint(doc: unknown): {
  totals: { errors: number; warnings: number };
  problems: { ruleId: string; message: string }[];
} {
  const dir = join(__dirname, '..', '..', '..', 'tmp');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `openapi-${process.pid}.json`);
  writeFileSync(file, JSON.stringify(doc, null, 2));
  const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' };
  const lint = spawnSync('npx', ['redocly', 'lint', file, '--format', 'json'], { encoding: 'utf8', env });
  rmSync(file, { force: true });
  return JSON.parse(lint.stdout);
}

describe('OpenAPI 3.1 description', () => {
  let t: TestApp;
  let doc: Json & {
    paths: Record<string, Record<string, Json>>;
    components: { schemas: Record<string, Json> };
  };
  beforeAll(async () => {
    // The real app only, without test-only endpoints, with the PUBLIC_URL a new install has (none set).
    t = await createTestApp({ PUBLIC_URL: undefined }, []);
    const res = await t.http().get('/v1/openapi.json');
    expect(res.status).toBe(200);
    doc = res.body;
  });
  afterAll(() => t.close());

  it('is served without a key at /v1/openapi.json with the common errors and headers', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toContain('/sync/connectors');
    const op = doc.paths['/sync/connectors']!.get as {
      responses: Record<string, { headers: Json; $ref: string }>;
    };
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '401', '403', '429', '500']));
    // The common error responses and headers are described once and referenced.
    const components = doc.components as unknown as Record<string, Record<string, { headers: Json }>>;
    const rateLimited = components['responses']![op.responses['429']!.$ref.split('/').pop()!]!;
    expect(rateLimited.headers['Retry-After']).toBeDefined();
    expect(op.responses['200']!.headers['RateLimit-Remaining']).toEqual({
      $ref: '#/components/headers/RateLimit-Remaining',
    });
    expect(components['headers']!['RateLimit-Remaining']).toBeDefined();
    expect(doc.paths['/test-probe/read']).toBeUndefined();
    // The initial sync's per-pair progress is described field by field (the worker writes it; the status shows it).
    const pairProgress = doc.components.schemas['InitialSyncPairProgressDto'] as {
      properties: Json;
      required: string[];
    };
    expect(Object.keys(pairProgress.properties)).toEqual(
      expect.arrayContaining([
        'table_pair',
        'stage',
        'preview',
        'processed',
        'created',
        'updated',
        'failed',
        'resumed',
        'unlinked',
      ]),
    );
    expect(pairProgress.required).not.toContain('unlinked');
  });

  it('names every operation with a distinct verb-first operationId a generated client can use', () => {
    const ids = operationIds(doc as never);
    const badlyNamed = ids.filter(
      (id) => !/^[a-z][a-zA-Z]+$/.test(id) || !VERBS.some((verb) => new RegExp(`^${verb}[A-Z]`).test(id)),
    );
    expect(badlyNamed).toEqual([]);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
    expect(ids).toEqual(expect.arrayContaining(['listSyncs', 'createSync', 'getSync', 'updateMappings']));
  });

  it('names the error body ErrorResponse, no schema after a built-in type, and no schema twice', () => {
    const schemas = doc.components.schemas as Record<string, Schema>;
    expect(Object.keys(schemas).filter((name) => BUILT_IN_NAMES.includes(name))).toEqual([]);
    expect(dtoTwins(schemas)).toEqual([]);
    const error = schemas['ErrorResponse'] as {
      properties: { error: { properties: { code: { enum: string[] }; required_action: Json } } };
    };
    expect(error.properties.error.properties.code.enum).toContain('idempotency_key_in_use');
    expect(
      schemas[String(error.properties.error.properties.required_action['$ref']).split('/').pop()!],
    ).toBeDefined();
    const refs = JSON.stringify(doc).match(/#\/components\/schemas\/[A-Za-z]+/g) ?? [];
    expect([...new Set(refs)].filter((ref) => !schemas[ref.split('/').pop()!])).toEqual([]);
  });

  it('passes `redocly lint` with no error and no warning, the servers entry included', () => {
    const result = redoclyLint(doc);
    expect(result.problems.map((p) => `${p.ruleId}: ${p.message}`)).toEqual([]);
    expect(result.totals).toMatchObject({ errors: 0, warnings: 0 });
    // Relative to the document's own address: right for every install, whatever its PUBLIC_URL.
    expect(doc.servers).toEqual([expect.objectContaining({ url: '/v1' })]);
  }, 120000);

  it('is the description the typed client is generated from (built without starting the app)', async () => {
    expect(await buildClientDocument()).toEqual(doc);
  });
});
