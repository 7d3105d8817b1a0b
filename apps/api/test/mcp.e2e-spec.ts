import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { DataSource } from 'typeorm';
import { JobProducer, QUEUES } from '@lockstep/jobs';
import { cli } from './support/cli';
import { waitUntil } from './support/live-sync';
import { scratchMysql, scratchPg, type ScratchMysql, type ScratchPg } from './support/scratch-dbs';
import { bearer, createTestApp, TEST_MASTER_KEY, type TestApp } from './support/test-app';

const ROOT = join(__dirname, '..', '..', '..');

/** The tools issue 28 names, by group. */
const TOOL_NAMES = [
  ...['sync_list_connectors', 'sync_create', 'sync_update', 'sync_list_bases', 'sync_list_tables'],
  ...['sync_list_fields', 'sync_get_mappings', 'sync_update_mappings', 'sync_validate_mappings'],
  ...['sync_activate', 'sync_pause', 'sync_delete'],
  ...['sync_get_status', 'sync_list_issues', 'sync_get_issue', 'sync_retry_issue', 'sync_list_operations'],
  ...['sync_get_operation', 'sync_search_records', 'sync_get_record_status', 'sync_list_pending_deletes'],
  ...['sync_list', 'sync_get', 'sync_whats_next'],
];
const LIVE_EXPORT_TOOL_NAMES = [
  ...['live_export_list', 'live_export_get', 'live_export_create', 'live_export_get_mappings'],
  ...['live_export_update_mappings', 'live_export_save', 'live_export_trigger', 'live_export_list_runs'],
  ...['live_export_cancel_run', 'live_export_update_schedule'],
];
const ALL_TOOL_NAMES = [...TOOL_NAMES, ...LIVE_EXPORT_TOOL_NAMES];

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

async function listen(t: TestApp): Promise<URL> {
  await t.app.listen(0, '127.0.0.1');
  const { port } = t.app.getHttpServer().address() as AddressInfo;
  return new URL(`http://127.0.0.1:${port}/mcp`);
}

async function connect(url: URL, key: string): Promise<Client> {
  const client = new Client({ name: 'lockstep-e2e', version: '1' });
  const headers = { Authorization: `Bearer ${key}` };
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
  return client;
}

async function call(client: Client, name: string, args: Json = {}): Promise<CallToolResult & { body: Json }> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  return { ...result, body: result.structuredContent as Json };
}

describe('MCP server (issue 28): tools over Streamable HTTP', () => {
  let t: TestApp;
  let url: URL;
  let accountId: string;
  let write: Client;
  let read: Client;
  let writeKey: string;

  beforeAll(async () => {
    t = await createTestApp();
    url = await listen(t);
    accountId = (await t.account()).id;
    writeKey = await t.key(accountId, 'readwrite');
    write = await connect(url, writeKey);
    read = await connect(url, await t.key(accountId, 'read'));
  });
  afterAll(async () => {
    await write?.close();
    await read?.close();
    await t?.close();
  });

  it('lists the 24 sync tools and the 10 live export tools, each with a description and an input schema taken from the OpenAPI document', async () => {
    const { tools } = await read.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([...ALL_TOOL_NAMES].sort());
    expect(tools.filter((tool) => tool.name.startsWith('sync_'))).toHaveLength(24);
    for (const tool of tools) {
      expect(tool.inputSchema.type).toBe('object');
      expect(tool.description!.length).toBeGreaterThan(60);
    }
    const openApi = (await t.http().get('/v1/openapi.json').expect(200)).body;
    // A tool's schema stands alone: the document's component references point into its `$defs`.
    const component = (name: string) =>
      JSON.parse(
        JSON.stringify(openApi.components.schemas[name]).replaceAll('#/components/schemas/', '#/$defs/'),
      );
    const byName = new Map(tools.map((tool) => [tool.name, tool.inputSchema as Json]));
    const create = byName.get('sync_create')!;
    expect(create.required).toEqual(['name', 'left', 'right']);
    expect(create.properties.name).toEqual(openApi.components.schemas.CreateSyncDto.properties.name);
    expect(create.$defs.SideInputDto).toEqual(component('SideInputDto'));
    expect(create.properties.left).toEqual({ $ref: '#/$defs/SideInputDto' });
    const mappings = byName.get('sync_update_mappings')!;
    expect(Object.keys(mappings.properties).sort()).toEqual(['if_match', 'sync_id', 'tables']);
    expect(mappings.$defs.TablePairDto).toEqual(component('TablePairDto'));
    expect(mappings.$defs.FieldPairDto).toEqual(component('FieldPairDto'));
    const issues = byName.get('sync_list_issues')!;
    expect(issues.required).toEqual(['sync_id']);
    const restType = openApi.paths['/sync/issues'].get.parameters.find((p: Json) => p.name === 'type');
    expect(issues.properties.type).toEqual({ ...restType.schema, description: restType.description });
    expect(byName.get('sync_get')!).toMatchObject({ required: ['sync_id'], additionalProperties: false });
    expect(byName.get('sync_list_tables')!.required.sort()).toEqual(['side', 'sync_id']);
  });

  it('answers read tools with the JSON of the REST endpoint, plus a text summary', async () => {
    const connectors = await call(read, 'sync_list_connectors');
    expect(connectors.isError).toBeFalsy();
    const rest = await t.http().get('/v1/sync/connectors').set(bearer(writeKey)).expect(200);
    expect(connectors.body).toEqual(rest.body);
    expect((connectors.content as Json[])[0].text).toContain('postgres');
    expect(JSON.parse((connectors.content as Json[])[1].text)).toEqual(rest.body);

    const syncId = await t.bareSync(accountId);
    const got = await call(read, 'sync_get', { sync_id: syncId });
    const restSync = await t.http().get(`/v1/sync/syncs/${syncId}`).set(bearer(writeKey)).expect(200);
    expect(got.body).toEqual(restSync.body);
    const list = await call(read, 'sync_list', { limit: 100 });
    expect(list.body.data.map((s: Json) => s.id)).toContain(syncId);
  });

  it('answers a service error as a tool error carrying the spec error body', async () => {
    const missing = await call(read, 'sync_get', { sync_id: 'sync_00000000000000000000' });
    expect(missing.isError).toBe(true);
    expect(missing.body).toEqual({
      error: {
        type: 'invalid_request_error',
        code: 'not_found',
        message: expect.any(String),
        doc_url: 'http://lockstep.test/docs/errors/not_found',
      },
    });
    const badLimit = await call(read, 'sync_list', { limit: 1000 });
    expect(badLimit.body.error.code).toBe('invalid_limit');
    const unknownArg = await call(read, 'sync_list', { colour: 'blue' });
    expect(unknownArg.body.error).toMatchObject({ code: 'invalid_request' });
    expect(unknownArg.body.error.message).toContain('colour');
    const badBody = await call(write, 'sync_create', { name: 'x', left: { connector: 7 }, right: {} });
    expect(badBody.body.error.code).toBe('invalid_request');
  });

  it('calls write tools with a readwrite key and refuses them to a read key with insufficient_scope', async () => {
    const refused = await call(read, 'sync_create', {
      name: 'Not allowed',
      left: { connector: 'postgres' },
      right: { connector: 'mysql' },
    });
    expect(refused.isError).toBe(true);
    expect(refused.body.error).toMatchObject({
      type: 'permission_error',
      code: 'insufficient_scope',
      details: { required_scope: 'readwrite', key_scope: 'read' },
    });
    expect((refused.content as Json[])[0].text).toContain('insufficient_scope');

    const created = await call(write, 'sync_create', {
      name: 'Deferred',
      left: { connector: 'postgres' },
      right: { connector: 'mysql' },
    });
    expect(created.isError).toBeFalsy();
    expect(created.body).toMatchObject({ status: 'draft', left: null, right: null });
    const renamed = await call(write, 'sync_update', { sync_id: created.body.id, name: 'Renamed' });
    expect(renamed.body.name).toBe('Renamed');
    const paused = await call(read, 'sync_pause', { sync_id: created.body.id });
    expect(paused.body.error).toMatchObject({
      code: 'insufficient_scope',
      details: { required_scope: 'operate' },
    });
    const next = await call(read, 'sync_whats_next', { sync_id: created.body.id });
    expect(next.body.next_step).toMatchObject({ who: 'person', type: 'user_authorization' });
    expect(next.body.next_step.url).toMatch(/^http:\/\/lockstep\.test\//);
    const deleted = await call(write, 'sync_delete', { sync_id: created.body.id });
    expect(deleted.body).toEqual({ id: created.body.id, deleted: true });
  });

  it('keeps a one-sync key to its sync', async () => {
    const mine = await t.bareSync(accountId);
    const other = await t.bareSync(accountId);
    const client = await connect(url, await t.key(accountId, 'readwrite', mine));
    try {
      const list = await call(client, 'sync_list');
      expect(list.body.data.map((s: Json) => s.id)).toEqual([mine]);
      expect((await call(client, 'sync_get', { sync_id: other })).body.error.code).toBe('not_found');
      expect((await call(client, 'sync_get', { sync_id: mine })).body.id).toBe(mine);
      const create = await call(client, 'sync_create', {
        name: 'x',
        left: { connector: 'postgres' },
        right: { connector: 'mysql' },
      });
      expect(create.body.error).toMatchObject({ type: 'permission_error', code: 'sync_restricted_key' });
      expect((await call(client, 'live_export_list')).body.error.code).toBe('sync_restricted_key');
      expect((await call(client, 'sync_list_connectors')).isError).toBeFalsy();
    } finally {
      await client.close();
    }
  });

  it('answers a missing or bad credential with 401, the spec body and WWW-Authenticate naming the metadata', async () => {
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    };
    const metadata = 'http://lockstep.test/.well-known/oauth-protected-resource/mcp';
    const missing = await t.http().post('/mcp').send(initialize).expect(401);
    expect(missing.body.error).toMatchObject({
      code: 'missing_api_key',
      required_action: { type: 'user_api_key' },
    });
    expect(missing.headers['www-authenticate']).toBe(`Bearer resource_metadata="${metadata}"`);
    const invalid = await t.http().post('/mcp').set(bearer('not-a-key')).send(initialize).expect(401);
    expect(invalid.body.error.code).toBe('invalid_api_key');
    expect(invalid.headers['www-authenticate']).toBe(
      `Bearer resource_metadata="${metadata}", error="invalid_token"`,
    );
    const described = await t.http().get('/.well-known/oauth-protected-resource/mcp').expect(200);
    expect(described.body).toMatchObject({
      resource: 'http://lockstep.test/mcp',
      bearer_methods_supported: ['header'],
    });
    await expect(connect(url, 'not-a-key')).rejects.toThrow();
  });

  it('stops a key revoked mid-session at its next request', async () => {
    const created = await t.keys.create(accountId, { name: 'to revoke', scope: 'read' });
    const client = await connect(url, created.secret);
    expect((await call(client, 'sync_list_connectors')).isError).toBeFalsy();
    await t.keys.revoke(created.id);
    await expect(client.callTool({ name: 'sync_list_connectors', arguments: {} })).rejects.toThrow(
      /401|invalid_api_key|Unauthorized/,
    );
    await client.close();
  });

  it('is named by llms.txt and the OpenAPI description', async () => {
    const index = await t.http().get('/llms.txt').expect(200);
    expect(index.text).toContain('http://lockstep.test/mcp');
    const openApi = (await t.http().get('/v1/openapi.json').expect(200)).body;
    expect(openApi.info.description).toContain('`/mcp`');
  });

  it('is stateless: GET and DELETE answer 405 after the key is checked', async () => {
    await t.http().get('/mcp').expect(401);
    const get = await t.http().get('/mcp').set(bearer(writeKey)).expect(405);
    expect(get.headers['allow']).toBe('POST');
    await t.http().delete('/mcp').set(bearer(writeKey)).expect(405);
  });
});

describe('MCP server: the whole build flow through tools, against PostgreSQL and MariaDB', () => {
  let t: TestApp;
  let pg: ScratchPg;
  let my: ScratchMysql;
  let client: Client;
  let syncId = '';
  let worker: ChildProcess | null = null;

  beforeAll(async () => {
    t = await createTestApp();
    pg = await scratchPg('CREATE TABLE people (id serial PRIMARY KEY, name text NOT NULL)');
    my = await scratchMysql(['CREATE TABLE unrelated (id int AUTO_INCREMENT PRIMARY KEY)']);
    const url = await listen(t);
    client = await connect(url, await t.key((await t.account()).id, 'readwrite'));
  });
  afterAll(async () => {
    if (worker && worker.exitCode === null) {
      const exited = new Promise((resolve) => worker!.once('exit', resolve));
      worker.kill('SIGTERM');
      await exited;
    }
    await client?.close();
    await Promise.all([pg?.drop(), my?.drop()]);
    await t?.close();
  });

  it('creates, discovers, maps with a create, validates, and is told a person must review and start it', async () => {
    const connectors = await call(client, 'sync_list_connectors');
    expect(connectors.body.data.map((c: Json) => c.type)).toEqual(
      expect.arrayContaining(['postgres', 'mysql']),
    );
    const sync = (
      await call(client, 'sync_create', {
        name: 'People to MariaDB',
        left: { connector: 'postgres', auth: { connectionString: pg.url }, base: pg.schema },
        right: { connector: 'mysql', auth: { connectionString: my.url }, base: my.database },
      })
    ).body;
    syncId = sync.id;
    expect(sync).toMatchObject({
      status: 'draft',
      left: { connector: 'postgres' },
      right: { connector: 'mysql' },
    });
    const bases = await call(client, 'sync_list_bases', { sync_id: sync.id, side: 'left' });
    expect(bases.body.data.map((b: Json) => b.name)).toContain(pg.schema);
    const first = await call(client, 'sync_whats_next', { sync_id: sync.id });
    expect(first.body.next_step).toMatchObject({ who: 'agent', tool: 'sync_list_tables' });

    const tables = await call(client, 'sync_list_tables', { sync_id: sync.id, side: 'left' });
    const people = tables.body.data.find((table: Json) => table.name === 'people');
    const fields = await call(client, 'sync_list_fields', { sync_id: sync.id, table_id: people.id });
    expect(fields.body.data.map((f: Json) => f.name)).toEqual(expect.arrayContaining(['id', 'name']));

    const current = await call(client, 'sync_get_mappings', { sync_id: sync.id });
    expect(current.body).toEqual({ tables: [] });
    const saved = await call(client, 'sync_update_mappings', {
      sync_id: sync.id,
      if_match: `"${sync.mappings_revision}"`,
      tables: [
        {
          left_table: people.id,
          right_table: { create: { name: 'people_copy' } },
          direction: 'left_to_right',
          fields: [{ left_field: 'name', right_field: { create: { name: 'name' } } }],
        },
      ],
    });
    expect(saved.isError).toBeFalsy();
    expect(saved.body.tables[0]).toMatchObject({ left_table: 'people', right_table: 'people_copy' });
    const validation = await call(client, 'sync_validate_mappings', { sync_id: sync.id });
    expect(validation.body.issues.filter((i: Json) => i.severity === 'error')).toEqual([]);

    const next = await call(client, 'sync_whats_next', { sync_id: sync.id });
    expect(next.body).toMatchObject({
      sync_id: sync.id,
      status: 'draft',
      next_step: { who: 'person', type: 'user_confirmation', url: sync.review_url },
    });
    expect((next.content as Json[])[0].text).toContain(sync.review_url);
    const activate = await call(client, 'sync_activate', { sync_id: sync.id });
    expect(activate.body.error).toMatchObject({
      type: 'requires_action',
      code: 'confirmation_required',
      required_action: { type: 'user_confirmation' },
    });
    expect((activate.content as Json[])[0].text).toContain('A person must act');
  });

  it('after a person starts it (the CLI stands in): status, operations, a record search, a held delete', async () => {
    expect(syncId).not.toBe('');
    await pg.sql(`INSERT INTO people (name) VALUES ('Ada'), ('Grace')`);
    const started = cli('sync', 'start', '--id', syncId);
    expect(started.code).toBe(0);
    worker = spawn(process.execPath, [join(ROOT, 'dist/apps/worker/src/main.js')], {
      env: {
        ...process.env,
        LOCKSTEP_MASTER_KEY: TEST_MASTER_KEY,
        ENGINE_ACCOUNT_ID: (
          await t.app.get(DataSource).query(`SELECT account_id FROM syncs WHERE id = $1`, [syncId])
        )[0].account_id,
        ENGINE_LEASE_SECONDS: '3',
        LOG_LEVEL: 'silent',
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    await waitUntil(
      'the initial sync to finish',
      async () =>
        (await call(client, 'sync_get_status', { sync_id: syncId })).body.initial_sync?.phase === 'done',
      90_000,
    );
    const operations = await waitUntil('operations', async () => {
      const page = await call(client, 'sync_list_operations', { sync_id: syncId });
      return page.body.data.length >= 2 ? page.body : null;
    });
    const operation = await call(client, 'sync_get_operation', { operation_id: operations.data[0].id });
    expect(operation.body).toHaveProperty('field_changes');
    const hits = await call(client, 'sync_search_records', { sync_id: syncId, query: 'Grace' });
    expect(hits.body.data.length).toBeGreaterThanOrEqual(1);
    const status = await call(client, 'sync_get_record_status', { record_id: hits.body.data[0].id });
    expect(status.isError).toBeFalsy();
    expect(status.body.left).not.toBeNull();

    await pg.sql(`DELETE FROM people WHERE name = 'Ada'`);
    const held = await waitUntil(
      'the held delete',
      async () => {
        const page = await call(client, 'sync_list_pending_deletes', { sync_id: syncId });
        return page.body.data?.length ? page.body : null;
      },
      60_000,
    );
    expect(held.data[0]).toMatchObject({ missing_side: 'left', delete_from_side: 'right' });
    const next = await call(client, 'sync_whats_next', { sync_id: syncId });
    expect(next.body.next_step).toMatchObject({ who: 'agent', tool: 'sync_list_pending_deletes' });
  });
});

describe('MCP server: a live export through tools, PostgreSQL to MariaDB', () => {
  let t: TestApp;
  let pg: ScratchPg;
  let my: ScratchMysql;
  let client: Client;

  beforeAll(async () => {
    t = await createTestApp({
      QUEUE_PREFIX: `${process.env.QUEUE_PREFIX}-mcp-lx-${randomBytes(3).toString('hex')}`,
    });
    pg = await scratchPg('CREATE TABLE companies (id serial PRIMARY KEY, name text NOT NULL)');
    my = await scratchMysql();
    const url = await listen(t);
    client = await connect(url, await t.key((await t.account({ plan: 'business' })).id, 'readwrite'));
  });
  afterAll(async () => {
    await client?.close();
    await t?.app
      .get(JobProducer)
      .queue(QUEUES.liveExport)
      .obliterate({ force: true })
      .catch(() => undefined);
    await Promise.all([pg?.drop(), my?.drop()]);
    await t?.close();
  });

  it('creates, maps, saves, schedules, triggers, lists and cancels a run', async () => {
    const lex = (
      await call(client, 'live_export_create', {
        name: 'Companies out',
        source: { connector: 'postgres', auth: { connectionString: pg.url }, base: pg.schema },
        destination: { connector: 'mysql', auth: { connectionString: my.url }, location: my.database },
      })
    ).body;
    expect(lex).toMatchObject({ status: 'draft' });
    const listed = await call(client, 'live_export_list');
    expect(listed.body.data.map((e: Json) => e.id)).toContain(lex.id);
    const current = await call(client, 'live_export_get_mappings', { live_export_id: lex.id });
    expect((current.content as Json[])[0].text).toContain(`"${lex.mappings_version}"`);
    const table = `companies_${randomBytes(3).toString('hex')}`;
    const stored = await call(client, 'live_export_update_mappings', {
      live_export_id: lex.id,
      if_match: `"${lex.mappings_version}"`,
      tables: [{ source_table: 'companies', destination_table: table, fields: [{ source_field: 'name' }] }],
    });
    expect(stored.isError).toBeFalsy();
    const noIfMatch = await call(client, 'live_export_update_mappings', {
      live_export_id: lex.id,
      tables: [],
    });
    expect(noIfMatch.body.error.code).toBe('invalid_request');
    const saved = await call(client, 'live_export_save', { live_export_id: lex.id });
    expect(saved.body).toMatchObject({ live_export: lex.id, location: my.database });
    const schedule = await call(client, 'live_export_update_schedule', {
      live_export_id: lex.id,
      cadence: 'hourly',
      enabled: false,
    });
    expect(schedule.body).toMatchObject({ cadence: 'hourly', enabled: false });
    const run = await call(client, 'live_export_trigger', { live_export_id: lex.id });
    expect(run.body).toMatchObject({ live_export: lex.id, state: 'queued', trigger: 'manual' });
    const busy = await call(client, 'live_export_trigger', { live_export_id: lex.id, force: true });
    expect(busy.body.error.code).toBe('run_in_progress');
    const runs = await call(client, 'live_export_list_runs', { live_export_id: lex.id });
    expect(runs.body.data.map((r: Json) => r.id)).toEqual([run.body.id]);
    const canceled = await call(client, 'live_export_cancel_run', { run_id: run.body.id });
    expect(canceled.body).toMatchObject({ id: run.body.id, state: 'canceled' });
    const got = await call(client, 'live_export_get', { live_export_id: lex.id });
    expect(got.body).toMatchObject({ id: lex.id, status: 'saved' });
  });
});

describe('MCP server: one rate budget per key with REST', () => {
  const prefix = `${process.env.QUEUE_PREFIX}-mcp-rl-${randomBytes(3).toString('hex')}`;
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({
      RATE_LIMIT_PER_MINUTE: 5,
      RATE_LIMIT_WINDOW_SECONDS: 30,
      QUEUE_PREFIX: prefix,
    });
  });
  afterAll(() => t?.close());

  it('counts tool calls and REST requests against the same budget', async () => {
    const key = await t.key((await t.account()).id, 'read');
    // Start early in a window so every request below falls in one.
    while (Date.now() % 30_000 > 20_000) await new Promise((r) => setTimeout(r, 250));
    const toolCall = () =>
      t
        .http()
        .post('/mcp')
        .set(bearer(key))
        .set('Accept', 'application/json, text/event-stream')
        .send({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'sync_list_connectors', arguments: {} },
        });
    await t.http().get('/v1/sync/connectors').set(bearer(key)).expect(200);
    await t.http().get('/v1/sync/connectors').set(bearer(key)).expect(200);
    for (const remaining of ['2', '1', '0']) {
      const res = await toolCall().expect(200);
      expect(res.body.result.isError).toBeFalsy();
      expect(res.headers['ratelimit-remaining']).toBe(remaining);
    }
    const rest = await t.http().get('/v1/sync/connectors').set(bearer(key)).expect(429);
    expect(rest.body.error.code).toBe('rate_limit_exceeded');
    const limited = await toolCall().expect(429);
    expect(limited.body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  });
});

describe('MCP server: the stdio bridge (`lockstep mcp --url URL --key KEY`)', () => {
  const cliMain = join(__dirname, '..', '..', '..', 'dist/apps/api/src/cli/main.js');
  let t: TestApp;
  let base: string;

  beforeAll(async () => {
    t = await createTestApp();
    base = (await listen(t)).origin;
  });
  afterAll(() => t?.close());

  it('serves the remote tools over stdio, results and errors unchanged', async () => {
    const accountId = (await t.account()).id;
    const key = await t.key(accountId, 'read');
    const client = new Client({ name: 'stdio-e2e', version: '1' });
    // The key from the environment; the address without /mcp (the bridge adds it).
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [cliMain, 'mcp', '--url', base],
      env: { ...(process.env as Record<string, string>), LOCKSTEP_API_KEY: key },
      stderr: 'pipe',
    });
    await client.connect(transport);
    try {
      expect(client.getInstructions()).toContain('sync_whats_next');
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual([...ALL_TOOL_NAMES].sort());
      const connectors = await call(client, 'sync_list_connectors');
      const rest = await t.http().get('/v1/sync/connectors').set(bearer(key)).expect(200);
      expect(connectors.body).toEqual(rest.body);
      const refused = await call(client, 'sync_delete', { sync_id: await t.bareSync(accountId) });
      expect(refused.body.error.code).toBe('insufficient_scope');
    } finally {
      await client.close();
    }
  });

  it('fails with a message on stderr when the key is refused', async () => {
    // Asynchronously: the API answering the bridge runs in this process.
    const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = execFile(
        process.execPath,
        [cliMain, 'mcp', '--url', `${base}/mcp`, '--key', 'not-a-key'],
        (_error, stdout, stderr) => resolve({ code: child.exitCode, stdout, stderr }),
      );
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/401|invalid_api_key/);
    expect(result.stdout).toBe('');
  });
});
