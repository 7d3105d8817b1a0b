import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** Where `npm start` keeps local state: the embedded PostgreSQL, Redis data, the master key. */
export function lockstepHome(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.LOCKSTEP_HOME || '.lockstep');
}

export interface LocalRuntime {
  DATABASE_URL?: string;
  REDIS_URL?: string;
}

/**
 * Fills DATABASE_URL, REDIS_URL and LOCKSTEP_MASTER_KEY from what `npm start` wrote under ./.lockstep/ when
 * the environment does not set them, so the operator CLI talks to the running local service.
 */
export function resolveLocalEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const home = lockstepHome(env);
  const result = { ...env };
  const runtimeFile = join(home, 'runtime.json');
  if (existsSync(runtimeFile)) {
    const runtime = JSON.parse(readFileSync(runtimeFile, 'utf8')) as LocalRuntime;
    result.DATABASE_URL ||= runtime.DATABASE_URL;
    result.REDIS_URL ||= runtime.REDIS_URL;
  }
  const keyFile = join(home, 'master.key');
  if (!result.LOCKSTEP_MASTER_KEY && existsSync(keyFile)) result.LOCKSTEP_MASTER_KEY = readFileSync(keyFile, 'utf8').trim();
  return result;
}
