/**
 * Console browser tests: the real API listening on 127.0.0.1 (PUBLIC_URL = that origin, so the links the API
 * hands out open in the browser) and Debian's headless Chromium driven by playwright-core, each browser with
 * a fresh user-data dir. Screenshots go to `artifacts/screenshots/` (gitignored).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { createTestApp, type TestApp } from '../support/test-app';

const ROOT = join(__dirname, '..', '..', '..', '..');
export const SCREENSHOTS = join(ROOT, 'artifacts', 'screenshots');
export const PASSWORD = 'correct horse battery';

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface ConsoleServer {
  t: TestApp;
  base: string;
  close(): Promise<void>;
}

export async function startConsoleServer(): Promise<ConsoleServer> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const t = await createTestApp({ PUBLIC_URL: base });
  await t.app.listen(port, '127.0.0.1');
  return { t, base, close: () => t.close() };
}

export interface Browser {
  context: BrowserContext;
  page: Page;
  close(): Promise<void>;
}

/**
 * `timezoneId`: the browser's time zone (UTC unless given, whatever the machine's); `javaScript: false` checks
 * that a page works without its script.
 */
export async function openBrowser(
  options: { timezoneId?: string; javaScript?: boolean } = {},
): Promise<Browser> {
  const dir = mkdtempSync(join(tmpdir(), 'lockstep-chromium-'));
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1200, height: 900 },
    timezoneId: options.timezoneId ?? 'UTC',
    javaScriptEnabled: options.javaScript ?? true,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    close: async () => {
      await context.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A full-page screenshot named after the page it shows (`<prefix>-<name>.png`; the journey uses its own). */
export async function shot(page: Page, name: string, prefix = 'console'): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${prefix}-${name}.png`), fullPage: true });
}

/** The sync overview's "N of M records" of a running initial sync, or null while it shows none. */
export async function initialDone(page: Page): Promise<{ done: number; total: number } | null> {
  const text = (await page.textContent('#initial-done').catch(() => null)) ?? '';
  const match = /^([\d,]+) of ([\d,]+) records$/.exec(text.trim());
  return match
    ? { done: Number(match[1]!.replace(/,/g, '')), total: Number(match[2]!.replace(/,/g, '')) }
    : null;
}

export async function signIn(page: Page, email: string, password = PASSWORD): Promise<void> {
  await page.fill('#email', email);
  await page.fill('#password', password);
  await Promise.all([page.waitForNavigation(), page.click('button:has-text("Sign in")')]);
}

/** Polls until `check` returns a truthy value (never a fixed sleep). */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | null | undefined | false>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`timed out waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
}

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[] }[];
}

/**
 * axe-core's check of the page as it is now: no serious or critical violation (listed with their rule, help
 * text and elements otherwise). axe-core's source is run in the page; the page itself has no script.
 */
export async function expectAccessible(page: Page): Promise<void> {
  // Evaluated over the DevTools protocol: the console's Content-Security-Policy refuses script tags (rightly).
  await page.evaluate(readFileSync(require.resolve('axe-core'), 'utf8'));
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: AxeViolation[] }> } }).axe;
    return (await axe.run()).violations;
  });
  const blocking = violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => JSON.stringify(n.target)).join(', ')})`,
    );
  expect([page.url(), blocking]).toEqual([page.url(), []]);
}

/**
 * Slows a process down by stopping it for `stoppedMs` of every `stoppedMs + runningMs` (SIGSTOP/SIGCONT):
 * on a fast machine the initial sync would otherwise finish between two of the overview's 2 s refreshes, before
 * a second sample gives the recent rate. Stops well inside the worker's 3 s lease. `release()` lets it run on.
 */
export function pace(child: ChildProcess, stoppedMs = 400, runningMs = 100): { release: () => void } {
  let released = false;
  const cycle = () => {
    if (released || child.exitCode !== null) return;
    child.kill('SIGSTOP');
    setTimeout(() => {
      if (child.exitCode === null) child.kill('SIGCONT');
      if (!released) setTimeout(cycle, runningMs);
    }, stoppedMs);
  };
  setTimeout(cycle, runningMs);
  return {
    release: () => {
      released = true;
      if (child.exitCode === null) child.kill('SIGCONT');
    },
  };
}
