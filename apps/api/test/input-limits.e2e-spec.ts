import { gzipSync } from 'node:zlib';
import { INPUT_LIMITS } from '@lockstep/contracts';
import { scratchMysql, scratchPg, type ScratchMysql, type ScratchPg } from './support/scratch-dbs';
import { bearer, createTestApp, type TestApp } from './support/test-app';

type Res = {
  status: number;
  body: {
    error?: { code: string; type: string; message: string; details?: { errors?: { path: string }[] } };
  };
};

/** Issue 31: bad input is refused at the edge as 400 invalid_request naming the path, never a 500. */
describe('input limits at the edge', () => {
  let t: TestApp;
  let key: string;
  let syncId: string;
  const side = {
    connector: 'postgres',
    auth: { connectionString: 'postgres://u:p@127.0.0.1:1/x' },
    base: 'public',
  };

  beforeAll(async () => {
    t = await createTestApp();
    const account = await t.account({ plan: 'business' });
    key = await t.key(account.id, 'readwrite');
    syncId = await t.bareSync(account.id);
  });
  afterAll(() => t.close());

  const refused = (res: Res, path: string) => {
    expect({ status: res.status, code: res.body.error?.code, type: res.body.error?.type }).toEqual({
      status: 400,
      code: 'invalid_request',
      type: 'invalid_request_error',
    });
    expect(res.body.error?.details?.errors?.map((problem) => problem.path)).toContain(path);
  };
  const post = (path: string, body: unknown) =>
    t
      .http()
      .post(path)
      .set(bearer(key))
      .send(body as object);
  const patch = (path: string, body: unknown) =>
    t
      .http()
      .patch(path)
      .set(bearer(key))
      .send(body as object);

  it.each([
    ['a sync without left', { name: 'x', right: side }, 'left'],
    ['a sync whose left is null', { name: 'x', left: null, right: side }, 'left'],
    [
      'a sync whose left.auth is null',
      { name: 'x', left: { ...side, auth: null }, right: side },
      'left.auth',
    ],
    [
      'a sync whose left.auth holds a number',
      { name: 'x', left: { ...side, auth: { connectionString: 5 } }, right: side },
      'left.auth',
    ],
    [
      'a sync whose left.base is null',
      { name: 'x', left: { ...side, base: null }, right: side },
      'left.base',
    ],
    ['a sync with a control character in its name', { name: 'a\u0007b', left: side, right: side }, 'name'],
    [
      'a sync with a 100 KB connection string',
      { name: 'x', left: { ...side, auth: { connectionString: 'p'.repeat(100_000) } }, right: side },
      'left.auth',
    ],
    [
      'a sync with a name over the limit',
      { name: 'n'.repeat(INPUT_LIMITS.name + 1), left: side, right: side },
      'name',
    ],
  ])('POST /sync/syncs refuses %s', async (_what, body, path) => {
    refused(await post('/v1/sync/syncs', body), path);
  });

  it.each([
    ['name: null', { name: null }, 'name'],
    ['left: null', { left: null }, 'left'],
    ['left.connector: null', { left: { connector: null } }, 'left.connector'],
  ])('PATCH /sync/syncs/{id} refuses %s', async (_what, body, path) => {
    refused(await patch(`/v1/sync/syncs/${syncId}`, body), path);
  });

  it.each([
    ['without source', { name: 'x', destination: { connector: 'mysql' } }, 'source'],
    ['without destination', { name: 'x', source: { connector: 'postgres' } }, 'destination'],
    [
      'with destination: null',
      { name: 'x', source: { connector: 'postgres' }, destination: null },
      'destination',
    ],
  ])('POST /live-export/live-exports refuses a body %s', async (_what, body, path) => {
    refused(await post('/v1/live-export/live-exports', body), path);
  });

  it('refuses a NUL character anywhere in the input: a body value, a body key, a query parameter, a path', async () => {
    refused(await post('/v1/sync/syncs', { name: 'a\u0000b', left: side, right: side }), 'name');
    refused(
      await t
        .http()
        .put(`/v1/sync/syncs/${syncId}/mappings`)
        .set(bearer(key))
        .send({ tables: [{ left: { create: { name: 'a\u0000b' } } }] }),
      'tables.0.left.create.name',
    );
    refused(await post('/v1/sync/syncs', { name: 'x', left: side, right: side, ['k\u0000']: 1 }), 'k\u0000');
    refused(await t.http().get(`/v1/sync/records?sync=${syncId}&query=%00`).set(bearer(key)), 'query');
    const inPath = await t.http().get(`/v1/sync/syncs/sync_%00`).set(bearer(key));
    expect({ status: inPath.status, code: inPath.body.error?.code }).toEqual({
      status: 400,
      code: 'invalid_request',
    });
  });

  it('refuses JSON nested deeper than the limit, however deep', async () => {
    for (const depth of [INPUT_LIMITS.jsonDepth + 1, 5_000]) {
      const body = `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
      const res = await t
        .http()
        .post('/v1/sync/syncs')
        .set(bearer(key))
        .set('Content-Type', 'application/json')
        .send(body);
      refused(res, Array.from({ length: INPUT_LIMITS.jsonDepth }, () => 'a').join('.'));
    }
    const arrays = `${'['.repeat(5_000)}${']'.repeat(5_000)}`;
    const res = await t
      .http()
      .put(`/v1/sync/syncs/${syncId}/mappings`)
      .set(bearer(key))
      .set('Content-Type', 'application/json')
      .send(arrays);
    expect({ status: res.status, code: res.body.error?.code }).toEqual({
      status: 400,
      code: 'invalid_request',
    });
  });

  it('refuses a body that does not decompress as its Content-Encoding says, and reads one that does', async () => {
    for (const encoding of ['gzip', 'deflate', 'br']) {
      const res = await t
        .http()
        .post('/v1/sync/syncs')
        .set(bearer(key))
        .set('Content-Type', 'application/json')
        .set('Content-Encoding', encoding)
        .send('{"name":"x"}');
      expect({ encoding, status: res.status, code: res.body.error?.code }).toEqual({
        encoding,
        status: 400,
        code: 'invalid_request',
      });
    }
    const unknown = await t
      .http()
      .post('/v1/sync/syncs')
      .set(bearer(key))
      .set('Content-Type', 'application/json')
      .set('Content-Encoding', 'zip')
      .send('{}');
    expect({ status: unknown.status, code: unknown.body.error?.code }).toEqual({
      status: 400,
      code: 'invalid_request',
    });
    const gzipped = await t
      .http()
      .post('/v1/sync/syncs')
      .set(bearer(key))
      .set('Content-Type', 'application/json')
      .set('Content-Encoding', 'gzip')
      .serialize((raw: unknown) => raw as string)
      .send(gzipSync('{"name":"x"}'));
    refused(gzipped, 'left');
  });

  it('answers a request whose line and headers are over the server limit with 400 invalid_request in the error shape', async () => {
    const res = await t
      .http()
      .get(`/v1/sync/syncs?q=${'x'.repeat(20_000)}`)
      .set(bearer(key));
    expect({ status: res.status, code: res.body.error?.code, type: res.body.error?.type }).toEqual({
      status: 400,
      code: 'invalid_request',
      type: 'invalid_request_error',
    });
    expect(res.body.error.doc_url).toBe('http://lockstep.test/docs/errors/invalid_request');
  });

  describe('names the connected app cannot hold', () => {
    let pg: ScratchPg;
    let my: ScratchMysql;
    let connected: string;
    beforeAll(async () => {
      pg = await scratchPg('CREATE TABLE people (id serial PRIMARY KEY, name text)');
      my = await scratchMysql();
      const body = {
        name: 'names',
        left: { connector: 'postgres', auth: { connectionString: pg.url }, base: pg.schema },
        right: { connector: 'mysql', auth: { connectionString: my.url }, base: my.database },
      };
      connected = (await post('/v1/sync/syncs', body).expect(201)).body.id;
    });
    afterAll(() => Promise.all([pg?.drop(), my?.drop()]));

    it.each([
      ['a MySQL table name beyond U+FFFF', { name: 'people_😀' }, {}],
      ['a MySQL column name beyond U+FFFF', { name: 'people_copy' }, { name: 'full_😀' }],
      ['a MySQL table name over 64 characters', { name: 't'.repeat(65) }, {}],
    ])('refuses %s as 400 create_failed, creating nothing', async (_what, table, field) => {
      const fields = 'name' in field ? [{ left_field: 'name', right_field: { create: field } }] : [];
      const doc = {
        tables: [
          { left_table: 'people', right_table: { create: table }, direction: 'left_to_right', fields },
        ],
      };
      const tables = async () =>
        (
          (await my.sql('SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ?', [
            my.database,
          ])) as { name: string }[]
        )
          .map((row) => row.name)
          .sort();
      const before = await tables();
      const res = await t.http().put(`/v1/sync/syncs/${connected}/mappings`).set(bearer(key)).send(doc);
      expect({ status: res.status, code: res.body.error?.code }).toEqual({
        status: 400,
        code: 'create_failed',
      });
      expect(await tables()).toEqual(before);
    });
  });

  it('documents the limits in the OpenAPI document', async () => {
    const doc = (await t.http().get('/v1/openapi.json').expect(200)).body;
    const schemas = doc.components.schemas;
    expect(schemas.CreateSyncDto.properties.name).toMatchObject({ maxLength: INPUT_LIMITS.name });
    expect(schemas.SideInputDto.properties.auth).toMatchObject({
      maxProperties: INPUT_LIMITS.credentialFields,
      additionalProperties: { type: 'string', maxLength: INPUT_LIMITS.credential },
    });
    expect(schemas.SideInputDto.properties.base).toMatchObject({ maxLength: INPUT_LIMITS.text });
    expect(schemas.CreateSyncDto.required).toEqual(expect.arrayContaining(['name', 'left', 'right']));
  });
});
