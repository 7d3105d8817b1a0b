/**
 * The OAuth console tests' world: a real OAuth 2.0 / OpenID Connect authorization server (oidc-provider in its
 * own process, `oauth-provider.mjs`) standing in for an app's sign-in, and the BUILT API process
 * (`dist/apps/api/src/main.js`; openid-client is ESM-only, which in-process Jest cannot import) with the
 * stand-in connector plugin (`fixtures/oauth-standin-connector.js`) and its client registration.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { TEST_MASTER_KEY } from '../support/test-app';

const ROOT = join(__dirname, '..', '..', '..', '..');
export const PROVIDER_PASSWORD = 'open sesame';
export const CLIENT_ID = 'lockstep-console-test';

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

/** Starts the provider and resolves with its issuer once it printed `READY <issuer>`. */
function startProvider(
  redirectUri: string,
  clientSecret: string,
): Promise<{ child: ChildProcess; issuer: string }> {
  const child = spawn(process.execPath, [join(__dirname, 'oauth-provider.mjs')], {
    env: {
      ...process.env,
      REDIRECT_URI: redirectUri,
      CLIENT_ID,
      CLIENT_SECRET: clientSecret,
      NODE_NO_WARNINGS: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let errors = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    errors += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(
      () => reject(new Error(`oauth provider did not start in 15 s: ${errors}`)),
      15_000,
    );
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`oauth provider exited (${code}): ${errors}`));
    });
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const ready = /READY (\S+)/.exec(out);
      if (ready) {
        clearTimeout(timer);
        child.removeAllListeners('exit');
        resolve({ child, issuer: ready[1]! });
      }
    });
  });
}

const API_MAIN = join(ROOT, 'dist/apps/api/src/main.js');

/** The built API's environment: the test database and Redis, this origin, the stand-in plugin. */
function apiEnv(port: number, issuer: string, overrides: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    PORT: String(port),
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    LOCKSTEP_MASTER_KEY: TEST_MASTER_KEY,
    RATE_LIMIT_PER_MINUTE: '100000',
    LOG_LEVEL: process.env['OAUTH_TEST_LOG'] ?? 'warn',
    CONNECTOR_PLUGINS: join(__dirname, 'fixtures', 'oauth-standin-connector.js'),
    OAUTH_STANDIN_ISSUER: issuer,
    ...overrides,
  };
}

/**
 * Runs the built API with a configuration that must stop it at boot; resolves with its exit code and output.
 * (Should it start anyway, it is stopped and the code is null.)
 */
export async function startApi(
  overrides: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  const port = await freePort();
  const api = spawn(process.execPath, [API_MAIN], {
    env: apiEnv(port, 'http://localhost:9', overrides),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  api.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  api.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => api.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 60_000;
  while (api.exitCode === null && Date.now() < deadline) {
    if (
      await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (response) => response.ok,
        () => false,
      )
    ) {
      await stop(api);
      return { code: null, output };
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  if (api.exitCode === null) await stop(api);
  return { code: await exited, output };
}

export interface OAuthWorld {
  /** The API's origin (PUBLIC_URL). */
  base: string;
  /** The stand-in app's issuer (its sign-in pages live under it). */
  issuer: string;
  api<T = Record<string, unknown>>(
    method: string,
    path: string,
    key: string,
    body?: unknown,
  ): Promise<{ status: number; body: T }>;
  close(): Promise<void>;
}

export async function startOAuthWorld(): Promise<OAuthWorld> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const secret = randomBytes(24).toString('base64url');
  const provider = await startProvider(`${base}/app/oauth/callback`, secret);
  let output = '';
  const api = spawn(process.execPath, [API_MAIN], {
    env: apiEnv(port, provider.issuer, {
      OAUTH_CLIENTS: JSON.stringify({ standin_oauth: { client_id: CLIENT_ID, client_secret: secret } }),
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  api.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  api.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (api.exitCode !== null) {
      await stop(provider.child);
      throw new Error(`the API exited (${api.exitCode}):\n${output}`);
    }
    const healthy = await fetch(`${base}/healthz`).then(
      (response) => response.ok,
      () => false,
    );
    if (healthy) break;
    if (Date.now() > deadline) {
      await Promise.all([stop(api), stop(provider.child)]);
      throw new Error(`the API did not become healthy in 30 s:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    base,
    issuer: provider.issuer,
    async api<T>(method: string, path: string, key: string, body?: unknown) {
      const response = await fetch(`${base}${path}`, {
        method,
        headers: {
          Authorization: `Bearer ${key}`,
          ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as T };
    },
    close: async () => {
      await Promise.all([stop(api), stop(provider.child)]);
    },
  };
}

export interface BuiltApi {
  /** The API's origin (PUBLIC_URL). */
  base: string;
  api<T = Record<string, unknown>>(
    method: string,
    path: string,
    key: string,
    body?: unknown,
  ): Promise<{ status: number; body: T }>;
  /** Stops the API process and starts it again on the same port (a restart: nothing kept in memory). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The built API alone, on a free port, with `env(base)` on top of the test environment (for an app whose
 * sign-in the test serves itself, such as the Airtable simulator).
 */
export async function startBuiltApi(env: (base: string) => Record<string, string>): Promise<BuiltApi> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const overrides = env(base);
  let api: ChildProcess;
  const launch = async (): Promise<void> => {
    let output = '';
    api = spawn(process.execPath, [API_MAIN], {
      env: apiEnv(port, 'http://localhost:9', overrides),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    api.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    api.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (api.exitCode !== null) throw new Error(`the API exited (${api.exitCode}):\n${output}`);
      const healthy = await fetch(`${base}/healthz`).then(
        (response) => response.ok,
        () => false,
      );
      if (healthy) return;
      if (Date.now() > deadline) {
        await stop(api);
        throw new Error(`the API did not become healthy in 60 s:\n${output}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  await launch();
  return {
    base,
    async api<T>(method: string, path: string, key: string, body?: unknown) {
      const response = await fetch(`${base}${path}`, {
        method,
        headers: {
          Authorization: `Bearer ${key}`,
          ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as T };
    },
    restart: async () => {
      await stop(api);
      await launch();
    },
    close: () => stop(api),
  };
}
