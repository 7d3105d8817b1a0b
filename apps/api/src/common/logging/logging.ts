import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { RequestMethod } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import { type DestinationStream, pino } from 'pino';
import { AppConfig } from '@lockstep/config';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** Optional provider: where log lines go instead of standard output (the tests read the lines back). */
export const LOG_DESTINATION = Symbol('LOG_DESTINATION');

/** One wildcard route: the logger is mounted once, in front of every path (the API sets no global prefix). */
const LOGGED_ROUTES = [{ path: '/{*splat}', method: RequestMethod.ALL }];

/**
 * Structured JSON logs (pino): one line per request. Every line logged while serving a request carries its
 * `req.id` (taken from a well-formed `X-Request-Id` or generated, and echoed in the response). Authorization
 * and cookies are redacted; bodies are never logged, so credentials and key secrets never reach a log line.
 */
export const LoggingModule = LoggerModule.forRootAsync({
  inject: [AppConfig, { token: LOG_DESTINATION, optional: true }],
  useFactory: (config: AppConfig, destination?: DestinationStream) => ({
    forRoutes: LOGGED_ROUTES,
    pinoHttp: withDestination(destination, {
      level: config.LOG_LEVEL,
      genReqId: (request: IncomingMessage, response: ServerResponse) => {
        const given = request.headers['x-request-id'];
        const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
        response.setHeader('X-Request-Id', id);
        return id;
      },
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers.cookie',
          'res.headers["set-cookie"]',
          '*.secret',
          '*.auth',
          '*.password',
        ],
        censor: '[redacted]',
      },
      serializers: {
        req: (req: { id: unknown; method: string; url: string }) => ({
          id: req.id,
          method: req.method,
          url: req.url.replace(/([?&](?:token|key|secret)=)[^&]*/gi, '$1[redacted]'),
        }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
      customLogLevel: (_req: IncomingMessage, res: ServerResponse, error?: Error) =>
        error || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info',
    }),
  }),
});

function withDestination<T>(destination: DestinationStream | undefined, options: T): [T, DestinationStream] {
  return [options, destination ?? pino.destination({ dest: 1, sync: false })];
}
