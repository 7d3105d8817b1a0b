import { plainToInstance, Transform } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Matches, Max, Min, validateSync } from 'class-validator';

const toInt = ({ value }: { value: unknown }) => (value === undefined || value === '' ? undefined : Number(value));
const toBool = ({ value }: { value: unknown }) =>
  value === undefined || value === '' ? undefined : ['1', 'true', 'yes', 'on'].includes(String(value).toLowerCase());

/**
 * The one configuration of the API, the worker and the CLI, read from the environment at boot and validated.
 * `process.env` is read nowhere else. `.env.example` lists every variable.
 */
export class AppConfig {
  /** HTTP port of the API. */
  @Transform(toInt) @IsInt() @Min(0) @Max(65535)
  PORT = 3000;

  /** Origin used in every `*_url` and pending-action link (default `http://localhost:PORT`). */
  @IsOptional() @Matches(/^https?:\/\/[^\s/]+(:\d+)?$/, { message: 'PUBLIC_URL must be an origin such as https://lockstep.example.com' })
  PUBLIC_URL?: string;

  /** PostgreSQL URL of the service store. */
  @IsString() @Matches(/^postgres(ql)?:\/\//, { message: 'DATABASE_URL must be a postgres:// URL' })
  DATABASE_URL: string;

  @IsString() @Matches(/^rediss?:\/\//, { message: 'REDIS_URL must be a redis:// URL' })
  REDIS_URL = 'redis://127.0.0.1:6379';

  /** Prefix of every Redis key (Bull queues, rate limit counters). */
  @IsString() @Matches(/^[A-Za-z0-9_.-]+$/)
  QUEUE_PREFIX = 'lockstep';

  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL = 'info';

  /** Requests per window per API key, shared by every API instance through Redis. */
  @Transform(toInt) @IsInt() @Min(1)
  RATE_LIMIT_PER_MINUTE = 120;

  /** Length of the rate-limit window in seconds (60 in production; tests shorten it). */
  @Transform(toInt) @IsInt() @Min(1) @Max(3600)
  RATE_LIMIT_WINDOW_SECONDS = 60;

  /**
   * 32 random bytes, base64: derives the keys that sign cursors and (with a later release) encrypt
   * connector credentials. The dev launcher creates one under ./.lockstep/ when none is set.
   */
  @IsString() @Matches(/^[A-Za-z0-9+/]{43}=$/, { message: 'LOCKSTEP_MASTER_KEY must be 32 bytes in base64 (openssl rand -base64 32)' })
  LOCKSTEP_MASTER_KEY: string;

  /** Largest accepted request body in bytes. */
  @Transform(toInt) @IsInt() @Min(1024)
  MAX_BODY_BYTES = 1_048_576;

  /** Connection targets: allow private ranges (10/8, 172.16/12, 192.168/16, fc00::/7). */
  @Transform(toBool)
  EGRESS_ALLOW_PRIVATE = true;

  /** Connection targets: allow loopback (127/8, ::1). Link-local and metadata addresses are always refused. */
  @Transform(toBool)
  EGRESS_ALLOW_LOOPBACK = true;

  /** Engine: seconds between full-scan reconciliations of each synced table (the change feed's safety net). */
  @Transform(toInt) @IsInt() @Min(1)
  ENGINE_FULL_SCAN_SECONDS = 3600;

  /** Engine: records per page read from an app (initial sync, full scans) and per change batch. */
  @Transform(toInt) @IsInt() @Min(10) @Max(10_000)
  ENGINE_PAGE_SIZE = 1000;

  /** Engine: records per write call to an app. */
  @Transform(toInt) @IsInt() @Min(1) @Max(10_000)
  ENGINE_WRITE_BATCH = 500;

  /** Engine: most syncs one worker owns at a time (others are left to other workers). */
  @Transform(toInt) @IsInt() @Min(1)
  ENGINE_MAX_SYNCS = 1000;

  /** Engine: syncs of one worker doing a round at once (bounds the app connections a worker holds). */
  @Transform(toInt) @IsInt() @Min(1) @Max(1000)
  ENGINE_CONCURRENCY = 8;

  /** Engine: run syncs in this process (the worker); tests of other parts turn it off. */
  @Transform(toBool)
  ENGINE_ENABLED = true;

  /** Engine: only run syncs of this account (tests; a dedicated worker for one tenant). Empty: every account. */
  @IsOptional() @IsString()
  ENGINE_ACCOUNT_ID?: string;

  /** Engine: seconds a sync's lease lasts without renewal (a crashed worker's syncs move after this). */
  @Transform(toInt) @IsInt() @Min(2) @Max(600)
  ENGINE_LEASE_SECONDS = 10;

  get publicUrl(): string {
    return this.PUBLIC_URL ?? `http://localhost:${this.PORT}`;
  }
}

export class ConfigError extends Error {}

/** Reads and validates the configuration; throws one ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Record<keyof AppConfig, unknown>> = {}): AppConfig {
  const raw: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined && value !== '') raw[key] = value;
  const config = plainToInstance(AppConfig, { ...raw, ...overrides }, { exposeDefaultValues: true });
  const errors = validateSync(config, { whitelist: false, forbidUnknownValues: false });
  if (errors.length > 0) {
    const lines = errors.map((e) => `${e.property}: ${Object.values(e.constraints ?? {}).join('; ') || 'is invalid'}`);
    throw new ConfigError(`Invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  return config;
}
