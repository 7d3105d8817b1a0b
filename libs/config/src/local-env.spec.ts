import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONFIG_SETTINGS } from './app-config';
import { recordLocalRuntime, resolveLocalEnv } from './local-env';

const KEY = Buffer.alloc(32, 3).toString('base64');
const STORE = 'postgres://postgres:secret@127.0.0.1:54329/lockstep';

/** What `npm start` hands the API and the worker: its settings among the rest of the shell's environment. */
const serviceEnv = {
  PATH: '/usr/bin',
  HOME: '/home/someone',
  DATABASE_URL: STORE,
  REDIS_URL: 'redis://127.0.0.1:6390',
  QUEUE_PREFIX: 'other-install',
  LOCKSTEP_MASTER_KEY: KEY,
  PUBLIC_URL: 'http://localhost:4000',
  PORT: '4000',
  EGRESS_ALLOW_LOOPBACK: 'false',
  CONNECTOR_PLUGINS: './plugins/app.js',
};

describe('the settings npm start records for the operator CLI', () => {
  let home: string;
  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'lockstep-local-env-'));
  });
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  it('names every AppConfig setting, those without a default included', () => {
    expect(CONFIG_SETTINGS).toEqual(
      expect.arrayContaining([
        'DATABASE_URL',
        'LOCKSTEP_MASTER_KEY',
        'PUBLIC_URL',
        'ENGINE_ACCOUNT_ID',
        'QUEUE_PREFIX',
        'OAUTH_CLIENTS',
      ]),
    );
    expect(CONFIG_SETTINGS).not.toContain('publicUrl');
  });

  it('records every setting the service got, and nothing else, readable by its owner only', () => {
    recordLocalRuntime(home, serviceEnv);
    const file = join(home, 'runtime.json');
    const { PATH: _path, HOME: _home, ...settings } = serviceEnv;
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(settings);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('gives the CLI exactly the service settings: queue prefix, master key, store, Redis and the rest', () => {
    recordLocalRuntime(home, serviceEnv);
    const env = resolveLocalEnv({ LOCKSTEP_HOME: home, PATH: '/bin' });
    const { PATH: _path, HOME: _home, ...settings } = serviceEnv;
    expect(env).toEqual({ LOCKSTEP_HOME: home, PATH: '/bin', ...settings });
  });

  it('lets the explicit environment win, setting by setting', () => {
    recordLocalRuntime(home, serviceEnv);
    const env = resolveLocalEnv({ LOCKSTEP_HOME: home, QUEUE_PREFIX: 'mine', DATABASE_URL: STORE, PORT: '' });
    expect(env).toMatchObject({
      QUEUE_PREFIX: 'mine',
      DATABASE_URL: STORE,
      PORT: '4000',
      LOCKSTEP_MASTER_KEY: KEY,
      REDIS_URL: 'redis://127.0.0.1:6390',
    });
  });

  it('applies nothing recorded when the environment names another store (another service)', () => {
    recordLocalRuntime(home, serviceEnv);
    writeFileSync(join(home, 'master.key'), `${KEY}\n`);
    const env = resolveLocalEnv({ LOCKSTEP_HOME: home, DATABASE_URL: 'postgres://elsewhere/lockstep' });
    expect(env).toEqual({ LOCKSTEP_HOME: home, DATABASE_URL: 'postgres://elsewhere/lockstep' });
  });

  it('falls back to the master key file the launcher created when the record holds no key', () => {
    writeFileSync(
      join(home, 'runtime.json'),
      JSON.stringify({ DATABASE_URL: STORE, REDIS_URL: 'redis://127.0.0.1:6390' }),
    );
    writeFileSync(join(home, 'master.key'), `${KEY}\n`);
    expect(resolveLocalEnv({ LOCKSTEP_HOME: home })).toMatchObject({
      DATABASE_URL: STORE,
      LOCKSTEP_MASTER_KEY: KEY,
    });
  });
});
