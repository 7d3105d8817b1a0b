import { createHmac } from 'node:crypto';
import { plainToInstance, Transform } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Matches, Max, Min, validateSync } from 'class-validator';
import { IsArray, ValidateBy } from 'class-validator';

const MASTER_KEY_PATTERN = /^[A-Za-z0-9+/]{43}=$/;

const toInt = ({ value }: { value: unknown }) =>
  value === undefined || value === '' ? undefined : Number(value);
const toBool = ({ value }: { value: unknown }) =>
  value === undefined || value === ''
    ? undefined
    : ['1', 'true', 'yes', 'on'].includes(String(value).toLowerCase());

/**
 * The one configuration of the API, the worker and the CLI, read from the environment at boot and validated.
 * `process.env` is read nowhere else. `.env.example` lists every variable.
 */
export class AppConfig {
  /** HTTP port of the API. */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(65535)
  PORT = 3000;

  /** Origin used in every `*_url` and pending-action link (default `http://localhost:PORT`). */
  @IsOptional()
  @Matches(/^https?:\/\/[^\s/]+(:\d+)?$/, {
    message: 'PUBLIC_URL must be an origin such as https://lockstep.example.com',
  })
  PUBLIC_URL?: string;

  /** PostgreSQL URL of the service store. */
  @IsString()
  @Matches(/^postgres(ql)?:\/\//, { message: 'DATABASE_URL must be a postgres:// URL' })
  DATABASE_URL: string;

  @IsString()
  @Matches(/^rediss?:\/\//, { message: 'REDIS_URL must be a redis:// URL' })
  REDIS_URL = 'redis://127.0.0.1:6379';

  /** Prefix of every Redis key (Bull queues, rate limit counters). */
  @IsString()
  @Matches(/^[A-Za-z0-9_.-]+$/)
  QUEUE_PREFIX = 'lockstep';

  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL = 'info';

  /** Requests per window per API key, shared by every API instance through Redis. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  RATE_LIMIT_PER_MINUTE = 120;

  /**
   * Seconds an API process trusts a key it verified without asking the store again. Revocations and account
   * changes made through Lockstep apply on the next request regardless; this bounds changes made in the store
   * directly (and while Redis is unreachable). 0 asks the store on every request.
   */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(300)
  API_KEY_CACHE_SECONDS = 10;

  /** Length of the rate-limit window in seconds (60 in production; tests shorten it). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(3600)
  RATE_LIMIT_WINDOW_SECONDS = 60;

  /**
   * 32 random bytes, base64: derives the keys that sign cursors and encrypt connector credentials. Everything
   * new is sealed and signed with it. The dev launcher creates one under ./.lockstep/ when none is set.
   */
  @IsString()
  @Matches(MASTER_KEY_PATTERN, {
    message: 'LOCKSTEP_MASTER_KEY must be 32 bytes in base64 (openssl rand -base64 32)',
  })
  LOCKSTEP_MASTER_KEY: string;

  /**
   * Master keys being rotated out, comma-separated: still accepted to open credentials and verify cursors,
   * never used to seal or sign. Set during a rotation (`keys rotate`), removed once it reports nothing left
   * to rotate.
   */
  @Transform(toList)
  @IsArray()
  @Matches(MASTER_KEY_PATTERN, {
    each: true,
    message: 'LOCKSTEP_MASTER_KEY_PREVIOUS must list keys of 32 bytes in base64, comma-separated',
  })
  LOCKSTEP_MASTER_KEY_PREVIOUS: string[] = [];

  /** Largest accepted request body in bytes. */
  @Transform(toInt)
  @IsInt()
  @Min(1024)
  MAX_BODY_BYTES = 1_048_576;

  /** Connection targets: allow private ranges (10/8, 172.16/12, 192.168/16, fc00::/7). */
  @Transform(toBool)
  EGRESS_ALLOW_PRIVATE = true;

  /**
   * Connection targets: allow loopback (127/8, ::1). Link-local and metadata addresses are always refused.
   */
  @Transform(toBool)
  EGRESS_ALLOW_LOOPBACK = true;

  /** Airtable connector: the Web API's origin (a proxy; the tests' simulator). */
  @Matches(/^https?:\/\/[^\s]+$/, { message: 'AIRTABLE_API_URL must be an http(s) URL' })
  AIRTABLE_API_URL = 'https://api.airtable.com';

  /** Airtable connector: the origin of its OAuth endpoints (browser sign-in, token refresh). */
  @Matches(/^https?:\/\/[^\s]+$/, { message: 'AIRTABLE_OAUTH_URL must be an http(s) URL' })
  AIRTABLE_OAUTH_URL = 'https://airtable.com';

  /**
   * NocoDB connector: requests per second per API token and server (every sync and live export of the token
   * together). Unset: 5 for NocoDB Cloud (`*.nocodb.com`, which answers 429 past its limit) and 20 for a
   * self-hosted server (which has no limit of its own).
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1000)
  NOCODB_REQUESTS_PER_SECOND?: number;

  /** NocoDB connector: seconds between two checks of a watched table for changes (webhooks or not). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(3600)
  NOCODB_POLL_SECONDS = 5;

  /** Engine: seconds between full-scan reconciliations of each synced table (the change feed's safety net). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  ENGINE_FULL_SCAN_SECONDS = 3600;

  /** Engine: records per page read from an app (initial sync, full scans) and per change batch. */
  @Transform(toInt)
  @IsInt()
  @Min(10)
  @Max(10_000)
  ENGINE_PAGE_SIZE = 1000;

  /**
   * Engine: a side of a pair with at least this many records (the initial sync's preview) runs its initial sync
   * pass as key ranges that any worker of the deployment takes (connectors with ordered keys only).
   */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  ENGINE_RANGE_MIN_ROWS = 50_000;

  /** Engine: the key ranges such a side is split into. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(256)
  ENGINE_RANGES = 4;

  /** Engine: records per write call to an app. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(10_000)
  ENGINE_WRITE_BATCH = 500;

  /** Engine: most syncs one worker owns at a time (others are left to other workers). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  ENGINE_MAX_SYNCS = 1000;

  /** Engine: syncs of one worker doing a round at once (bounds the app connections a worker holds). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1000)
  ENGINE_CONCURRENCY = 8;

  /** Engine: run syncs in this process (the worker); tests of other parts turn it off. */
  @Transform(toBool)
  ENGINE_ENABLED = true;

  /**
   * Engine: only run syncs of this account (tests; a dedicated worker for one tenant). Empty: every account.
   */
  @IsOptional()
  @IsString()
  ENGINE_ACCOUNT_ID?: string;

  /**
   * Engine: a file the worker writes where each initial sync pass's wall time goes (reading, deciding,
   * waiting, the target's writes, the store's commits; JSON, rewritten after every step). For the engine
   * benchmark and profiling; empty: not written.
   */
  @IsOptional()
  @IsString()
  ENGINE_STAGE_TIMES_FILE?: string;

  /** Engine: seconds a sync's lease lasts without renewal (a crashed worker's syncs move after this). */
  @Transform(toInt)
  @IsInt()
  @Min(2)
  @Max(600)
  ENGINE_LEASE_SECONDS = 10;

  /**
   * Connector plugins: comma-separated modules (absolute paths, paths relative to the working directory, or
   * installed package names) whose exported connector declarations are offered next to the built-in ones.
   */
  @Transform(toList)
  @IsArray()
  @IsString({ each: true })
  CONNECTOR_PLUGINS: string[] = [];

  /**
   * OAuth client credentials per connector type, JSON: `{"<type>": {"client_id": "...", "client_secret":
   * "...", "token_endpoint_auth_method": "client_secret_basic" | "client_secret_post" | "none"}}` (the method
   * defaults to client_secret_basic, or none without a secret). An oauth connector without an entry cannot be
   * connected.
   */
  @Transform(parseJsonSetting)
  @ValidateBy({
    name: 'oauthClients',
    validator: {
      validate: (value: unknown) => oauthClientsProblem(value) === null,
      defaultMessage: (args) => `OAUTH_CLIENTS ${oauthClientsProblem(args?.value)}`,
    },
  })
  OAUTH_CLIENTS: Record<string, OAuthClientSetting> = {};

  /** Live export: runs one worker carries out at once. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(64)
  LIVE_EXPORT_CONCURRENCY = 2;

  /** Live export: rows per destination transaction (one batch of upserts and removals). */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(100000)
  LIVE_EXPORT_BATCH_ROWS = 5000;

  /**
   * Live export: a running run whose heartbeat is older than this is orphaned (its worker died): re-queued
   * once, then failed.
   */
  @Transform(toInt)
  @IsInt()
  @Min(2)
  @Max(3600)
  LIVE_EXPORT_STALE_SECONDS = 30;

  /**
   * Live export: a run whose source has the export's change capture writes only the rows changed since the
   * last run, but compares every row (hashes of both sides) at least this often, to repair what capture
   * cannot see (a destination edited by hand, a source transaction open longer than the capture's hold
   * window).
   */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(8760)
  LIVE_EXPORT_FULL_COMPARE_HOURS = 24;

  /**
   * Live export tests only: the scheduler's "now" comes from the Redis key `<QUEUE_PREFIX>:live-export:clock`
   * (ms) when set.
   */
  @Transform(toBool)
  LIVE_EXPORT_TEST_CLOCK = false;

  /** The settings connectors read (`ConnectContext.settings`): their base URLs. */
  get connectorSettings(): Readonly<Record<string, string | undefined>> {
    return {
      AIRTABLE_API_URL: this.AIRTABLE_API_URL,
      AIRTABLE_OAUTH_URL: this.AIRTABLE_OAUTH_URL,
      NOCODB_REQUESTS_PER_SECOND: this.NOCODB_REQUESTS_PER_SECOND?.toString(),
      NOCODB_POLL_SECONDS: String(this.NOCODB_POLL_SECONDS),
      // Only a PUBLIC_URL someone set: the default (localhost) is no address an app's webhook can call.
      PUBLIC_URL: this.PUBLIC_URL,
      NOCODB_HOOK_KEY: hookKey(this.LOCKSTEP_MASTER_KEY, 'nocodb'),
    };
  }

  /**
   * The OAuth client registration of connector `type` as a connection takes it (`ConnectContext.oauthClient`:
   * a signed-in side renews its token with it), or undefined when `OAUTH_CLIENTS` has none.
   */
  connectorOAuthClient(type: string): ConnectorOAuthClient | undefined {
    if (!Object.prototype.hasOwnProperty.call(this.OAUTH_CLIENTS, type)) return undefined;
    const client = this.OAUTH_CLIENTS[type]!;
    return {
      clientId: client.client_id,
      ...(client.client_secret ? { clientSecret: client.client_secret } : {}),
      tokenEndpointAuthMethod:
        client.token_endpoint_auth_method ?? (client.client_secret ? 'client_secret_basic' : 'none'),
    };
  }

  get publicUrl(): string {
    return this.PUBLIC_URL ?? `http://localhost:${this.PORT}`;
  }
}

/**
 * The name of every setting of `AppConfig`. Its fields are class fields (ES2022 semantics: each one is an own
 * property of an instance, initialised or not), so a new setting is listed here without being named twice.
 */
export const CONFIG_SETTINGS = Object.keys(new AppConfig()) as readonly ConfigSetting[];

/** A setting's name (`publicUrl` is derived from PUBLIC_URL and PORT, not a setting). */
export type ConfigSetting = Exclude<
  keyof AppConfig & string,
  'publicUrl' | 'connectorSettings' | 'connectorOAuthClient'
>;

export class ConfigError extends Error {}

/**
 * The key that signs an app's webhook URLs (`POST /hooks/<app>/<channel>` carries HMAC(key, channel)): derived
 * from the master key, so the API that checks it and the worker that registers it agree without a setting.
 */
export function hookKey(masterKey: string | undefined, app: string): string | undefined {
  if (!masterKey) return undefined;
  return createHmac('sha256', masterKey).update(`lockstep-hooks:${app}`).digest('hex');
}

/** Reads and validates the configuration; throws one ConfigError naming every bad variable. */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  overrides: Partial<Record<keyof AppConfig, unknown>> = {},
): AppConfig {
  const raw: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined && value !== '') raw[key] = value;
  const config = plainToInstance(AppConfig, { ...raw, ...overrides }, { exposeDefaultValues: true });
  const errors = validateSync(config, { whitelist: false, forbidUnknownValues: false });
  if (errors.length > 0) {
    const lines = errors.map(
      (e) => `${e.property}: ${Object.values(e.constraints ?? {}).join('; ') || 'is invalid'}`,
    );
    throw new ConfigError(`Invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  return config;
}

/** A registration as connections take it (the SDK's `OAuthClientRegistration`). */
export interface ConnectorOAuthClient {
  clientId: string;
  clientSecret?: string;
  tokenEndpointAuthMethod: 'client_secret_basic' | 'client_secret_post' | 'none';
}

/** One connector's OAuth client registration (`OAUTH_CLIENTS`). */
export interface OAuthClientSetting {
  client_id: string;
  client_secret?: string;
  token_endpoint_auth_method?: 'client_secret_basic' | 'client_secret_post' | 'none';
}

function toList({ value }: { value: unknown }): unknown {
  if (Array.isArray(value)) return value;
  if (value === undefined || value === '') return [];
  return String(value)
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

function parseJsonSetting({ value }: { value: unknown }): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value;
  }
}

/** Why an `OAUTH_CLIENTS` value is unusable, or null when it is sound. */
function oauthClientsProblem(value: unknown): string | null {
  const shape = 'must be a JSON object {"<connector type>": {"client_id": "...", "client_secret": "..."}}';
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return shape;
  for (const [type, client] of Object.entries(value as Record<string, unknown>)) {
    if (typeof client !== 'object' || client === null || Array.isArray(client))
      return `${shape}; the entry for "${type}" is not an object`;
    const entry = client as Record<string, unknown>;
    if (typeof entry['client_id'] !== 'string' || entry['client_id'] === '')
      return `entry "${type}" needs a non-empty string client_id`;
    if (
      entry['client_secret'] !== undefined &&
      (typeof entry['client_secret'] !== 'string' || entry['client_secret'] === '')
    )
      return `entry "${type}": client_secret must be a non-empty string when given`;
    const method = entry['token_endpoint_auth_method'];
    if (
      method !== undefined &&
      !['client_secret_basic', 'client_secret_post', 'none'].includes(method as string)
    ) {
      return (
        `entry "${type}": token_endpoint_auth_method must be client_secret_basic, client_secret_post or ` +
        `none`
      );
    }
    if (method !== undefined && method !== 'none' && entry['client_secret'] === undefined)
      return `entry "${type}": ${String(method)} needs a client_secret`;
    const unknown = Object.keys(entry).filter(
      (key) => !['client_id', 'client_secret', 'token_endpoint_auth_method'].includes(key),
    );
    if (unknown.length > 0) return `entry "${type}" has unknown keys: ${unknown.join(', ')}`;
  }
  return null;
}
