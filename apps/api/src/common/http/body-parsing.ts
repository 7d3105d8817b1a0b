import type { NextFunction, Request, Response } from 'express';
import express from 'express';
import { DomainError, ErrorCode } from '@lockstep/contracts';
import { assertCleanInput } from './input-check';

/** The parser's own errors as `400 invalid_request`; anything else stays as it is (a 500). */
function parserError(error: unknown, maxBytes: number): unknown {
  const { type, status } = error as { type?: string; status?: number };
  if (type === 'entity.too.large')
    return new DomainError(ErrorCode.InvalidRequest, `Request body is larger than ${maxBytes} bytes.`, {
      max_bytes: maxBytes,
    });
  if (type === 'entity.parse.failed')
    return new DomainError(ErrorCode.InvalidRequest, 'Request body is not valid JSON.');
  if (type === 'charset.unsupported' || type === 'encoding.unsupported') {
    return new DomainError(
      ErrorCode.InvalidRequest,
      'Request body must be UTF-8 JSON (`Content-Encoding` identity, gzip, deflate or br).',
    );
  }
  // A body that does not decompress as its `Content-Encoding` says, a stream cut short or a length mismatch.
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new DomainError(
      ErrorCode.InvalidRequest,
      'Request body could not be read: it does not match its `Content-Encoding` or `Content-Length`.',
    );
  }
  return error;
}

/**
 * JSON bodies only. A body with another content type, malformed JSON, more than `maxBytes`, a broken
 * encoding, too deep a nesting or a NUL character anywhere in the input is `400 invalid_request` in the
 * spec's error shape (express's own parser errors never reach a client).
 */
export function jsonBodyParser(maxBytes: number) {
  const parse = express.json({ limit: maxBytes, type: () => true, strict: false });
  return (request: Request, response: Response, done: NextFunction): void => {
    const next = (error?: unknown): void => {
      if (error) return done(error);
      try {
        assertCleanInput({
          path: request.originalUrl.split('?')[0],
          query: request.query,
          body: request.body,
        });
      } catch (problem) {
        return done(problem);
      }
      done();
    };
    const hasBody =
      Number(request.headers['content-length'] ?? 0) > 0 ||
      request.headers['transfer-encoding'] !== undefined;
    if (!hasBody || request.method === 'GET' || request.method === 'HEAD') {
      request.body = undefined;
      next();
      return;
    }
    const type = request.headers['content-type'] ?? '';
    if (!/^application\/([a-z0-9.+-]+\+)?json\s*(;|$)/i.test(type)) {
      next(
        new DomainError(
          ErrorCode.InvalidRequest,
          'Request bodies must be JSON with `Content-Type: application/json`.',
        ),
      );
      return;
    }
    parse(request, response, (error?: unknown) => next(error ? parserError(error, maxBytes) : undefined));
  };
}
