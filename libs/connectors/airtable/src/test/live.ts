/**
 * The opt-in live run against the real Airtable Web API (`live.spec.ts`): its configuration from the
 * environment, and a small client of its own for what the contract suite does "outside Lockstep" (creating the
 * fixture table, writing records as a person would, renaming the tables a previous run left).
 *
 * Both variables set: the run happens. Neither: it is skipped with the reason printed. Only one: the
 * configuration is wrong, and the run fails rather than passing by skipping everything.
 */
import type { ConnectContext } from '@lockstep/connectors-core';
import type { OutsideWriter } from '@lockstep/connectors-core/testing';
import { parseCredentials } from '../credentials';
import { AirtableApi } from '../db';

export const LIVE_TOKEN_VAR = 'LOCKSTEP_LIVE_AIRTABLE_TOKEN';
export const LIVE_BASE_VAR = 'LOCKSTEP_LIVE_AIRTABLE_BASE';

export type LiveConfig =
  { run: true; token: string; base: string; apiUrl: string } | { run: false; reason: string };

export function liveAirtableConfig(env: NodeJS.ProcessEnv): LiveConfig {
  const token = env[LIVE_TOKEN_VAR]?.trim() ?? '';
  const base = env[LIVE_BASE_VAR]?.trim() ?? '';
  if (!token && !base) {
    return {
      run: false,
      reason: `${LIVE_TOKEN_VAR} and ${LIVE_BASE_VAR} are not set: the live Airtable run is skipped`,
    };
  }
  if (!token || !base) {
    throw new Error(
      `The live Airtable run needs both ${LIVE_TOKEN_VAR} and ${LIVE_BASE_VAR}; only ` +
        `${token ? LIVE_TOKEN_VAR : LIVE_BASE_VAR} is set`,
    );
  }
  const apiUrl = (env['AIRTABLE_API_URL']?.trim() || 'https://api.airtable.com').replace(/\/+$/, '');
  return { run: true, token, base, apiUrl };
}

/** Tables the contract suite and the round trip create: renamed out of the way at the start of a run. */
export const LIVE_TABLE_PREFIX = 'ls_';
interface LiveRecord {
  id: string;
  fields: Record<string, unknown>;
}

/**
 * Requests through the connector's own HTTP client with the same coordination as the connections under test,
 * so the run's "outside" writes share the base's rate budget with them (and wait out a 429 like them).
 */
export class LiveAirtable {
  private readonly api: AirtableApi;

  constructor(
    private readonly config: { token: string; base: string },
    context: ConnectContext,
  ) {
    this.api = new AirtableApi(parseCredentials({ apiKey: config.token }, context), context);
  }

  async request<T>(method: string, path: string, json?: unknown, baseId?: string): Promise<T> {
    const budget = baseId ?? /\/(app[A-Za-z0-9]+)/.exec(path)?.[1] ?? null;
    return (await this.api.request<T>({ method, path, json, baseId: budget, context: 'Live run' })).data;
  }

  /** The base's id (the variable may hold an id or an exact name). */
  async baseId(): Promise<string> {
    if (/^app[A-Za-z0-9]+$/.test(this.config.base)) return this.config.base;
    const { bases } = await this.request<{ bases: { id: string; name: string }[] }>('GET', '/v0/meta/bases');
    const found = bases.find((base) => base.name === this.config.base);
    if (!found) throw new Error(`The token cannot see a base named "${this.config.base}"`);
    return found.id;
  }

  async tables(baseId: string): Promise<{ id: string; name: string }[]> {
    const path = `/v0/meta/bases/${baseId}/tables`;
    return (await this.request<{ tables: { id: string; name: string }[] }>('GET', path)).tables;
  }

  /**
   * https://airtable.com/developers/web/api/update-table: the Web API cannot delete a table, so the tables a
   * previous run left (named `ls_...`) are renamed `zz_lockstep_old_<time>_<name>` for a person to delete.
   */
  async renameLeftovers(baseId: string): Promise<string[]> {
    const renamed: string[] = [];
    for (const table of await this.tables(baseId)) {
      if (!table.name.startsWith(LIVE_TABLE_PREFIX)) continue;
      const name = `zz_lockstep_old_${Date.now()}_${table.name}`;
      await this.request('PATCH', `/v0/meta/bases/${baseId}/tables/${table.id}`, { name });
      renamed.push(name);
    }
    return renamed;
  }

  /** https://airtable.com/developers/web/api/create-table */
  async createTable(baseId: string, name: string, fields: object[]): Promise<void> {
    await this.request('POST', `/v0/meta/bases/${baseId}/tables`, { name, fields });
  }

  /** https://airtable.com/developers/web/api/list-records, all pages, fields by name. */
  async records(baseId: string, table: string): Promise<LiveRecord[]> {
    const all: LiveRecord[] = [];
    let offset: string | undefined;
    do {
      const query = offset ? `?offset=${encodeURIComponent(offset)}` : '';
      const page = await this.request<{ records: LiveRecord[]; offset?: string }>(
        'GET',
        `/v0/${baseId}/${encodeURIComponent(table)}${query}`,
      );
      all.push(...page.records);
      offset = page.offset;
    } while (offset);
    return all;
  }

  /** Writes as a person in Airtable makes them, fields by name. */
  outside(baseId: () => string): OutsideWriter {
    const path = (table: string) => `/v0/${baseId()}/${encodeURIComponent(table)}`;
    const matching = async (table: string, where: Record<string, string | number>) =>
      (await this.records(baseId(), table)).filter((record) =>
        Object.entries(where).every(([name, value]) => String(record.fields[name] ?? '') === String(value)),
      );
    return {
      insert: async (table, values) => {
        await this.request('POST', path(table), { records: [{ fields: values }] });
      },
      update: async (table, where, values) => {
        for (const record of await matching(table, where))
          await this.request('PATCH', path(table), { records: [{ id: record.id, fields: values }] });
      },
      delete: async (table, where) => {
        for (const record of await matching(table, where))
          await this.request('DELETE', `${path(table)}?records[]=${record.id}`);
      },
    };
  }
}
