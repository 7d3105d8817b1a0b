import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { CONFIG_SETTINGS, type ConfigSetting } from './app-config';

/** Where `npm start` keeps local state: the embedded PostgreSQL, Redis data, the master key. */
export function lockstepHome(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.LOCKSTEP_HOME || '.lockstep');
}

/** The settings of the service `npm start` runs, by `AppConfig` name, as the API and the worker got them. */
export type LocalRuntime = Partial<Record<ConfigSetting, string>>;

const runtimeFile = (home: string) => join(home, 'runtime.json');

/**
 * Records for the operator CLI every setting `npm start` gives the API and the worker: each `AppConfig`
 * setting set in `env`, including the store, Redis and master key the launcher resolved itself. Anything else
 * in `env` is left out. Readable by its owner only: it holds the store's password and the master key.
 */
export function recordLocalRuntime(home: string, env: NodeJS.ProcessEnv): LocalRuntime {
  const runtime: LocalRuntime = {};
  for (const name of CONFIG_SETTINGS) if (env[name]) runtime[name] = env[name];
  writeFileSync(runtimeFile(home), `${JSON.stringify(runtime, null, 2)}\n`, { mode: 0o600 });
  chmodSync(runtimeFile(home), 0o600);
  return runtime;
}

function recordedRuntime(home: string): LocalRuntime {
  const file = runtimeFile(home);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as LocalRuntime) : {};
}

/**
 * The environment of the operator CLI: every setting `npm start` recorded under ./.lockstep/ that the
 * environment does not set itself, so the CLI reads and writes where the running local service does (its
 * store, its Redis and queue prefix, its master key). The recorded settings belong to one service: when the
 * environment names another store (DATABASE_URL set to a different URL), none of them applies.
 */
export function resolveLocalEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const home = lockstepHome(env);
  const recorded = recordedRuntime(home);
  const result = { ...env };
  if (env.DATABASE_URL && recorded.DATABASE_URL && env.DATABASE_URL !== recorded.DATABASE_URL) return result;
  for (const [name, value] of Object.entries(recorded)) result[name] ||= value;
  // No recorded key (no record, or one from a launcher that did not record it): the key it created here.
  const keyFile = join(home, 'master.key');
  if (!result.LOCKSTEP_MASTER_KEY && existsSync(keyFile)) {
    result.LOCKSTEP_MASTER_KEY = readFileSync(keyFile, 'utf8').trim();
  }
  return result;
}
