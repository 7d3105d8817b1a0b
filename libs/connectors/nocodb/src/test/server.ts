/**
 * The real NocoDB the connector's specs run against: one server per test run, started by the first spec that
 * asks (`tools/test/nocodb/harness.js`), and a base of its own per spec file (`useNocodb()`), so spec files
 * running in parallel workers never share state. Outside CI, a machine without NocoDB installed skips these
 * specs and prints why; with CI=true they fail with the message that says how to install it.
 */
import type { ConnectContext, Connection } from '@lockstep/connectors-core';
import { LocalCoordination } from '@lockstep/connectors-http';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { nocodbConnector } from '../declaration';

export interface NocodbServer {
  url: string;
  /** An API token (`xc-token`) of the server's first user (a super admin). */
  token: string;
  /** The same user's JWT (`xc-auth`): the routes an API token cannot use (creating tokens). */
  jwt: string;
  pid?: number;
  /** How long its boot took (server.js). */
  startedMs?: number;
  database?: string;
}

/** A NocoDB of one test's own, which it may kill and start again (same database, same port). */
export interface OwnNocodb {
  start(): Promise<NocodbServer & { port: number }>;
  /** SIGKILL: NocoDB gone at once, as in a crash. */
  kill(): Promise<void>;
  /** Kills it and drops its database. */
  stop(): Promise<void>;
}

interface Harness {
  ensureNocodb(): Promise<NocodbServer>;
  ownNocodb(database: string): OwnNocodb;
  unavailableReason(): string | null;
}

/** The repository's test harness (plain JavaScript shared with jest's global teardown and the benchmark). */
const HARNESS = join(__dirname, '..', '..', '..', '..', '..', 'tools', 'test', 'nocodb', 'harness.js');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const harness: Harness = require(HARNESS);

/** Why NocoDB cannot run here (null when it can); in CI a reason fails the specs instead of skipping them. */
export function nocodbUnavailable(): string | null {
  const reason = harness.unavailableReason();
  if (reason && process.env.CI) return null; // CI: let `ensureNocodb` throw it as a failure
  return reason;
}

/** `describe`, or `describe.skip` with the reason printed, when NocoDB is not installed outside CI. */
export function describeNocodb(title: string, body: () => void): void {
  const reason = nocodbUnavailable();
  if (reason) {
    console.warn(`Skipping "${title}": ${reason}`);
    describe.skip(`${title} (skipped: ${reason})`, body);
  } else {
    describe(title, body);
  }
}

export function startNocodb(): Promise<NocodbServer> {
  return harness.ensureNocodb();
}

/** A NocoDB server of the caller's own on a fresh database named after `prefix` (not started yet). */
export function ownNocodb(prefix: string): OwnNocodb {
  return harness.ownNocodb(`lockstep_${uniqueName(prefix)}`);
}

/** One JSON request to the server as its first user (setup the connector is not under test for). */
export async function admin<T>(
  server: NocodbServer,
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
  const send = () =>
    fetch(`${server.url}${path}`, {
      method,
      headers: { 'content-type': 'application/json', 'xc-token': server.token },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  // A kept-alive socket the server closed as it was reused fails before NocoDB sees the request: send again.
  const response = await send().catch(send);
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path} -> ${response.status} ${text.slice(0, 400)}`);
  return (text ? JSON.parse(text) : null) as T;
}

export function uniqueName(prefix: string): string {
  return `${prefix}_${randomBytes(4).toString('hex')}`;
}

/** The id of the table titled `title` in `baseId` (throws when there is none). */
export async function tableIdByTitle(server: NocodbServer, baseId: string, title: string): Promise<string> {
  const tables = await admin<{ list: { id: string; title: string }[] }>(
    server,
    'GET',
    `/api/v2/meta/bases/${baseId}/tables`,
  );
  const table = tables.list.find((candidate) => candidate.title === title);
  if (!table) throw new Error(`no table ${title}`);
  return table.id;
}

export async function createBase(server: NocodbServer, title: string): Promise<string> {
  const base = await admin<{ id: string }>(server, 'POST', '/api/v2/meta/bases', { title });
  return base.id;
}

export async function deleteBase(server: NocodbServer, baseId: string): Promise<void> {
  await admin(server, 'DELETE', `/api/v2/meta/bases/${baseId}`).catch(() => undefined);
}

export interface NocodbFixture {
  server: NocodbServer;
  baseId: string;
  context: ConnectContext;
  connect(
    base?: string | null,
    extra?: { token?: string; context?: Partial<ConnectContext> },
  ): Promise<Connection>;
}

/** The server, a fresh base for this spec file (beforeAll, deleted afterAll) and connections to it. */
export function useNocodb(prefix = 'spec'): NocodbFixture {
  const opened: Connection[] = [];
  const fixture: NocodbFixture = {
    server: null as unknown as NocodbServer,
    baseId: '',
    context: null as unknown as ConnectContext,
    connect: async (base = fixture.baseId, extra = {}) => {
      const connection = await nocodbConnector.connect(
        { baseUrl: fixture.server.url, apiToken: extra.token ?? fixture.server.token },
        base,
        { ...fixture.context, ...extra.context },
      );
      opened.push(connection);
      return connection;
    },
  };
  beforeAll(async () => {
    fixture.server = await startNocodb();
    fixture.baseId = await createBase(fixture.server, uniqueName(prefix));
    fixture.context = {
      egress: { allowPrivate: true, allowLoopback: true },
      shared: new LocalCoordination(),
    };
  }, 320_000);
  afterAll(async () => {
    await Promise.all(opened.map((connection) => connection.close()));
    if (fixture.server && fixture.baseId) await deleteBase(fixture.server, fixture.baseId);
  });
  return fixture;
}
export { startProxy, type Proxy } from './proxy';
