/** What the simulator's specs share: a fresh simulator per test with a token and a base, and a client. */
import { type ConnectorError, isConnectorError } from '@lockstep/connectors-core';
import {
  type AppErrorTable,
  HttpClient,
  type HttpClientOptions,
  LocalCoordination,
} from '@lockstep/connectors-http';
import { AirtableSimulator, type SimulatorOptions } from './simulator';
import type { SimBase } from './simulator-model';

export const SIM_TOKEN = 'patSIMULATOR.0123456789';

/** Airtable's error body, `{ error: { type, message } }`; the kinds are only what these specs need. */
const ERRORS: AppErrorTable = {
  kinds: { AUTHENTICATION_REQUIRED: 'auth', INVALID_PERMISSIONS_OR_MODEL_NOT_FOUND: 'permission' },
  codeOf: (body) => (body as { error?: { type?: string } })?.error?.type,
  messageOf: (body) => (body as { error?: { message?: string } })?.error?.message,
};

export interface SimulatorFixture {
  simulator: AirtableSimulator;
  /** A base named "Sales" the token reaches. */
  base: SimBase;
  /** A client of the simulator with `token`, no retries, its own in-process budget. */
  client(token?: string, extra?: Partial<HttpClientOptions>): HttpClient;
  /** Replaces the simulator by one with other options (a new token and base too). */
  restart(options: SimulatorOptions): Promise<void>;
}

/** Starts a simulator before each test of the calling spec file and closes it after. */
export function useSimulator(options: SimulatorOptions): SimulatorFixture {
  const fixture: SimulatorFixture = {
    simulator: null as unknown as AirtableSimulator,
    base: null as unknown as SimBase,
    client: (token = SIM_TOKEN, extra = {}) =>
      new HttpClient({
        baseUrl: fixture.simulator.url,
        egress: { allowPrivate: true, allowLoopback: true },
        headers: () => ({ authorization: `Bearer ${token}` }),
        appErrors: ERRORS,
        shared: new LocalCoordination(),
        retry: { attempts: 1, rateLimitedAttempts: 1 },
        ...extra,
      }),
    restart: async (others) => {
      await fixture.simulator.close();
      await open(others);
    },
  };
  async function open(chosen: SimulatorOptions): Promise<void> {
    fixture.simulator = await AirtableSimulator.start(chosen);
    fixture.simulator.addToken(SIM_TOKEN);
    fixture.base = fixture.simulator.addBase('Sales');
  }
  beforeEach(() => open(options));
  afterEach(() => fixture.simulator.close());
  return fixture;
}

/** The ConnectorError a request ends with (fails the test when it succeeds). */
export async function refused(promise: Promise<unknown>): Promise<ConnectorError> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  if (!isConnectorError(error)) throw new Error(`expected a ConnectorError, got ${String(error)}`);
  return error;
}
