import type { NextFunction, Request, Response } from 'express';
import express from 'express';
import { DomainError, ErrorCode } from '@lockstep/contracts';

/**
 * JSON bodies only. A body with another content type, malformed JSON or more than `maxBytes` is
 * `400 invalid_request` in the spec's error shape (express's own parser errors never reach a client).
 */
export function jsonBodyParser(maxBytes: number) {
  const parse = express.json({ limit: maxBytes, type: () => true, strict: false });
  return (request: Request, response: Response, next: NextFunction): void => {
    const hasBody = Number(request.headers['content-length'] ?? 0) > 0 || request.headers['transfer-encoding'] !== undefined;
    if (!hasBody || request.method === 'GET' || request.method === 'HEAD') {
      request.body = undefined;
      next();
      return;
    }
    const type = request.headers['content-type'] ?? '';
    if (!/^application\/([a-z0-9.+-]+\+)?json\s*(;|$)/i.test(type)) {
      next(new DomainError(ErrorCode.InvalidRequest, 'Request bodies must be JSON with `Content-Type: application/json`.'));
      return;
    }
    parse(request, response, (error?: unknown) => {
      if (!error) return next();
      const kind = (error as { type?: string }).type;
      if (kind === 'entity.too.large') {
        return next(new DomainError(ErrorCode.InvalidRequest, `Request body is larger than ${maxBytes} bytes.`, { max_bytes: maxBytes }));
      }
      if (kind === 'entity.parse.failed') {
        return next(new DomainError(ErrorCode.InvalidRequest, 'Request body is not valid JSON.'));
      }
      if (kind === 'charset.unsupported' || kind === 'encoding.unsupported') {
        return next(new DomainError(ErrorCode.InvalidRequest, 'Request body must be UTF-8 JSON.'));
      }
      return next(error);
    });
  };
}
