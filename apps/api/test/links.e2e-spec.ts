/**
 * Spec section 1: every `*_url` (and `url`) a response carries is followed as it is. A typical flow on a live
 * sync between PostgreSQL and MariaDB (schema, mappings, validate, an operation, a record issue and its retry,
 * a record search, a held delete, a side left for a person to connect) and a live export (tables, fields,
 * locations, mappings, save, schedule, trigger, runs) collects every link of every response; each is then
 * followed (the API ones with POST for an action link, otherwise GET, a method the OpenAPI description
 * gives the path; the console ones with a signed-in session), and none answers 404.
 */
import { DataSource } from 'typeorm';
import { mysqlDestination, pgSource } from './support/live-export';
import { type LiveSync, liveSync, waitUntil } from './support/live-sync';
import { PASSWORD } from './console/console-harness';
import { uniqueName } from './support/scratch-dbs';
import { bearer, createTestApp, type TestApp } from './support/test-app';

jest.setTimeout(180_000);

const BASE = 'http://lockstep.test';

/** Every link of a response body: values of keys named `url` or ending in `_url`, wherever they are. */
function linksOf(body: unknown, from: string, into: Map<string, string>): void {
  if (Array.isArray(body)) body.forEach((item) => linksOf(item, from, into));
  else if (body && typeof body === 'object') {
    for (const [key, value] of Object.entries(body)) {
      if ((key === 'url' || key.endsWith('_url')) && typeof value === 'string') {
        if (!into.has(value)) into.set(value, `${from} ${key}`);
      } else linksOf(value, from, into);
    }
  }
}

/** Links to an action, followed with POST; every other link is followed with GET. */
const ACTIONS = ['validate_url', 'retry_url', 'save_url', 'trigger_url', 'cancel_url'];

/** The methods the OpenAPI description gives the documented path an API link points at (empty: none). */
function documentedMethods(paths: Record<string, object>, path: string): string[] {
  const relative = path.replace(/^\/v1/, '');
  for (const [template, item] of Object.entries(paths)) {
    const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`);
    if (pattern.test(relative))
      return Object.keys(item).filter((key) => ['get', 'post', 'put', 'patch', 'delete'].includes(key));
  }
  return [];
}

describe('links: every *_url of a typical flow is followable', () => {
  let t: TestApp;
  let live: LiveSync;
  const links = new Map<string, string>();

  beforeAll(async () => {
    t = await createTestApp();
    live = await liveSync(t, {
      pgSetup: `
        CREATE TABLE people (id integer PRIMARY KEY, name text NOT NULL, email text);
        INSERT INTO people VALUES (1, 'Ada', 'ada@example.com'), (2, 'Grace', 'grace@example.com');
      `,
      // A constraint the left side does not have: a duplicate email is refused by MariaDB only.
      mySetup: [
        'CREATE TABLE contacts (id INT PRIMARY KEY, name VARCHAR(60) NOT NULL, email VARCHAR(100))',
        'CREATE UNIQUE INDEX contacts_email ON contacts (email)',
      ],
      // The worker writes links into the issues it records: the same public URL as the API's.
      workerEnv: { PUBLIC_URL: BASE },
      tables: [
        {
          left_table: 'people',
          right_table: 'contacts',
          direction: 'two_way',
          fields: [
            { left_field: 'id', right_field: 'id' },
            { left_field: 'name', right_field: 'name' },
            { left_field: 'email', right_field: 'email' },
          ],
        },
      ],
    });
    await live.db.query(`UPDATE accounts SET plan = 'business' WHERE id = $1`, [live.accountId]);
  });

  afterAll(async () => {
    await live?.close();
    await t?.close();
  });

  /** A request of the flow; its body's links are collected (error bodies too: their `doc_url`). */
  async function call(
    method: 'get' | 'post' | 'put' | 'patch',
    path: string,
    body?: object,
    headers: Record<string, string> = {},
  ) {
    const res = await t
      .http()
      [method](path.replace(BASE, ''))
      .set(bearer(live.keys.write))
      .set(headers)
      .send(body);
    expect(res.status).toBeLessThan(500);
    linksOf(res.body, `${method.toUpperCase()} ${path.replace(BASE, '')}`, links);
    return res;
  }

  async function syncFlow(): Promise<void> {
    const sync = (await call('get', `/v1/sync/syncs/${live.id}`)).body;
    await call('get', '/v1/sync/syncs');
    await call('get', '/v1/sync/connectors');
    await call('get', '/v1/sync/syncs/sync_unknown'); // an error: its doc_url
    for (const url of [sync.status_url, sync.left.bases_url, sync.right.bases_url, sync.validate_url])
      await call(url === sync.validate_url ? 'post' : 'get', url);
    for (const side of ['left', 'right']) {
      const tables = (await call('get', sync[side].tables_url)).body;
      for (const table of tables.data) await call('get', table.fields_url);
    }
    await call('get', sync.mappings_url);

    // An operation, a record issue (MariaDB refuses the duplicate email) and a held delete.
    await live.pg.sql(`UPDATE people SET name = 'Ada Lovelace' WHERE id = 1`);
    await live.pg.sql(`INSERT INTO people VALUES (3, 'Copy', 'grace@example.com')`);
    await live.pg.sql(`DELETE FROM people WHERE id = 2`);
    const issues = await waitUntil(
      'the record issue',
      async () =>
        (await call('get', sync.issues_url)).body.data.length > 0
          ? (await call('get', sync.issues_url)).body.data
          : null,
      60_000,
    );
    await call('get', `/v1/sync/issues/${issues[0].id}`);
    await waitUntil(
      'the held delete',
      async () => (await call('get', sync.pending_deletes_url)).body.data.length > 0,
      60_000,
    );
    const operations = (await call('get', sync.operations_url)).body.data;
    await call('get', `/v1/sync/operations/${operations[0].id}`);
    const hits = (await call('get', `/v1/sync/records?sync=${live.id}&query=Ada`)).body.data;
    await call('get', hits[0].url);
    await call('post', issues[0].retry_url);

    // A sync whose right side a person connects (its pending action links the console).
    await call('post', '/v1/sync/syncs', {
      name: 'Deferred',
      left: { connector: 'postgres', auth: { connectionString: live.pg.url }, base: live.pg.schema },
      right: { connector: 'mysql' },
    });
  }

  async function liveExportFlow(): Promise<void> {
    const lex = (
      await call('post', '/v1/live-export/live-exports', {
        name: 'links',
        source: pgSource(live.pg),
        destination: mysqlDestination(live.my),
      })
    ).body;
    await call('get', '/v1/live-export/live-exports');
    await call('get', '/v1/live-export/connectors');
    const tables = (await call('get', lex.source.tables_url)).body;
    for (const table of tables.data) await call('get', table.fields_url);
    await call('get', lex.destination.locations_url);
    await call('get', lex.mappings_url);
    const doc = {
      tables: [
        {
          source_table: 'people',
          destination_table: uniqueName('people'),
          fields: [{ source_field: 'id', primary: true }, { source_field: 'name' }],
        },
      ],
    };
    await call('put', lex.mappings_url, doc, { 'If-Match': '"1"' });
    await call('post', lex.validate_url);
    await call('post', lex.save_url);
    await call('patch', lex.schedule_url, { cadence: 'daily', time_of_day: '03:00', timezone: 'UTC' });
    await call('post', lex.trigger_url, { force: true });
    const runs = (await call('get', lex.runs_url)).body.data;
    await call('get', runs[0].url);
    await call('get', lex.url);
    // An export whose source a person connects (its pending action links the console).
    await call('post', '/v1/live-export/live-exports', {
      name: 'links-deferred',
      source: { connector: 'postgres' },
      destination: mysqlDestination(live.my),
    });
  }

  /** A console session of the sync's account (the links under /app open pages a person signs in to). */
  async function consoleCookie(): Promise<string> {
    const [{ email }] = await t.app
      .get(DataSource)
      .query(`SELECT email FROM accounts WHERE id = $1`, [live.accountId]);
    const page = await t.http().get('/app/sign-in').expect(200);
    const csrfCookie = (page.headers['set-cookie'] as unknown as string[])
      .find((c) => c.startsWith('lockstep_csrf='))!
      .split(';')[0]!;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)![1]!;
    const signedIn = await t
      .http()
      .post('/app/sign-in')
      .set('Cookie', csrfCookie)
      .set('Origin', BASE)
      .type('form')
      .send({ _csrf: csrf, email, password: PASSWORD, next: '/app' })
      .expect(303);
    return (signedIn.headers['set-cookie'] as unknown as string[])
      .find((c) => c.startsWith('lockstep_session='))!
      .split(';')[0]!;
  }

  it('follows every link without a 404', async () => {
    await syncFlow();
    await liveExportFlow();
    const paths = (await t.http().get('/v1/openapi.json').expect(200)).body.paths as Record<string, object>;
    const cookie = await consoleCookie();
    const kinds = new Set<string>();
    const broken: string[] = [];
    for (const [url, from] of links) {
      // Links into other sites (a connector's help page) are not this service's to answer.
      if (!url.startsWith(`${BASE}/`)) {
        expect(url).toMatch(/^https:\/\//);
        continue;
      }
      const path = url.replace(BASE, '');
      const pathname = path.split('?')[0]!;
      let res;
      if (pathname.startsWith('/v1/')) {
        const method = ACTIONS.includes(from.split(' ').pop()!) ? 'post' : 'get';
        if (!documentedMethods(paths, pathname).includes(method))
          broken.push(`${url} (from ${from}): ${method} is not documented there`);
        res = await t.http()[method](path).set(bearer(live.keys.write));
      } else {
        res = await t.http().get(path).set('Cookie', cookie);
        if (res.status === 303 && String(res.headers['location']).startsWith('/app/sign-in'))
          broken.push(`${url} (from ${from}): asks to sign in again`);
      }
      if (res.status === 404 || res.status >= 500)
        broken.push(`${url} (from ${from}): ${res.status} ${JSON.stringify(res.body?.error?.message ?? '')}`);
      kinds.add(from.split(' ').pop()!);
    }
    expect(broken).toEqual([]);
    // The flow reached the links it is about.
    for (const kind of [
      'url',
      'fields_url',
      'tables_url',
      'mappings_url',
      'record_url',
      'retry_url',
      'review_url',
      'browser_url',
      'operations_url',
      'doc_url',
      'runs_url',
      'cancel_url',
    ]) {
      expect([kind, kinds.has(kind)]).toEqual([kind, true]);
    }
    const pages = [
      /\/app\/syncs\/[^/]+\/connect\/right$/,
      /\/app\/live-exports\/[^/]+\/connect\/source$/,
      /\/app\/syncs\/[^/]+\/pending-deletes\/rec_/,
    ];
    for (const page of pages)
      expect([page, [...links.keys()].some((url) => page.test(url))]).toEqual([page, true]);
  });
});
