/**
 * The request log (pino-http): every request is logged exactly once, with its request id, whatever part of
 * the app serves it (the API under /v1, health, discovery, error pages, OpenAPI, the console). The app's log
 * lines are captured through the LOG_DESTINATION provider.
 */
import { Global, Module } from '@nestjs/common';
import { LOG_DESTINATION } from '../src/common/logging/logging';
import { ProbeModule } from './support/probe.module';
import { bearer, createTestApp, type TestApp } from './support/test-app';

const lines: Record<string, unknown>[] = [];

@Global()
@Module({
  providers: [
    { provide: LOG_DESTINATION, useValue: { write: (line: string) => lines.push(JSON.parse(line)) } },
  ],
  exports: [LOG_DESTINATION],
})
class LogCaptureModule {}

/** The request log lines (`req` and `res` set, as pino-http writes them) of one request id. */
const requestLines = (id: string) =>
  lines.filter((line) => (line['req'] as { id?: string } | undefined)?.id === id && 'res' in line);

describe('request logging', () => {
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    t = await createTestApp({ LOG_LEVEL: 'info' }, [ProbeModule, LogCaptureModule]);
    key = await t.key((await t.account()).id, 'read');
  });
  afterAll(() => t.close());

  it.each([
    ['/healthz', 200],
    ['/', 200],
    ['/llms.txt', 200],
    ['/metrics', 200],
    ['/docs/errors', 200],
    ['/docs/errors/not_found', 200],
    ['/docs/errors/no_such_code', 404],
    ['/app', 303],
    ['/app/sign-in', 200],
    ['/app/syncs/sync_unknown/review', 303],
    ['/app/assets/console.css', 200],
    ['/v1/openapi.json', 200],
    ['/v1/sync/connectors', 200],
    ['/v1/no-such-thing', 404],
  ])('logs GET %s once, with its request id and status', async (path, status) => {
    const id = `log-${path.replace(/[^A-Za-z0-9]/g, '_')}-${Date.now()}`;
    const res = await t.http().get(path).set(bearer(key)).set('X-Request-Id', id);
    expect(res.status).toBe(status);
    expect(res.headers['x-request-id']).toBe(id);
    // Lines are written when the response finishes (every listener of that one event at once), which may be
    // just after the client has read the response.
    const deadline = Date.now() + 5000;
    while (requestLines(id).length === 0 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 20));
    const logged = requestLines(id);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ req: { id, method: 'GET', url: path }, res: { statusCode: status } });
  });
});
