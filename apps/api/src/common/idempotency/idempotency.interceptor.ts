import {
  type CallHandler,
  type ExecutionContext,
  HttpStatus,
  Injectable,
  type NestInterceptor,
  UseInterceptors,
  applyDecorators,
  SetMetadata,
} from '@nestjs/common';
import { HTTP_CODE_METADATA } from '@nestjs/common/constants';
import { Reflector } from '@nestjs/core';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Request, Response } from 'express';
import { createHash } from 'node:crypto';
import { from, lastValueFrom, type Observable } from 'rxjs';
import type { DataSource } from 'typeorm';
import { DomainError, ErrorCode } from '@lockstep/contracts';
import { IdempotencyStore } from '@lockstep/persistence';

const KEY_SHAPE = /^[\x21-\x7e]{1,255}$/;
const TTL_MS = 24 * 60 * 60 * 1000;
/** Response headers stored with the response and sent again on replay. */
const REPLAYED_HEADERS = ['etag', 'location'];
export const IDEMPOTENT = 'lockstep:idempotent';

/** A stored response sent again; rendered by the error filter (it bypasses the route's own reply). */
export class ReplayedResponse {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string>,
  ) {}
}

/** Canonical JSON (sorted keys) so the same body in another key order has the same fingerprint. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/**
 * `Idempotency-Key` (spec section 8): per account and endpoint for 24 hours with a fingerprint of the body.
 * A replay returns the original status and body with `Idempotent-Replayed: true`; another body is
 * `idempotency_key_reused`; a duplicate while the first runs is `idempotency_key_in_use`; a failed request
 * releases its key. The row is claimed with one INSERT, so two concurrent requests cannot both run.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  private readonly records: IdempotencyStore;

  constructor(
    private readonly reflector: Reflector,
    @InjectDataSource() dataSource: DataSource,
  ) {
    this.records = new IdempotencyStore(dataSource.manager);
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return from(this.run(context, next));
  }

  private async run(context: ExecutionContext, next: CallHandler): Promise<unknown> {
    const request = context.switchToHttp().getRequest<Request>();
    const response = context.switchToHttp().getResponse<Response>();
    const raw = request.headers['idempotency-key'];
    if (raw === undefined) return lastValueFrom(next.handle(), { defaultValue: undefined });
    const key = Array.isArray(raw) ? raw.join(',') : raw;
    if (!KEY_SHAPE.test(key)) {
      throw new DomainError(
        ErrorCode.InvalidIdempotencyKey,
        'Idempotency-Key must be 1 to 255 visible ASCII characters.',
      );
    }
    const accountId = request.auth!.accountId;
    const endpoint = `${request.method} ${request.path}`;
    const fingerprint = createHash('sha256')
      .update(canonicalJson(request.body ?? null))
      .digest('hex');

    const ref = { accountId, endpoint, key };
    const claimed = await this.records.claim(ref, fingerprint, new Date(Date.now() + TTL_MS));
    if (!claimed) {
      const existing = await this.records.find(ref);
      if (!existing) return this.run(context, next); // released meanwhile: try again
      if (existing.fingerprint !== fingerprint) {
        throw new DomainError(
          ErrorCode.IdempotencyKeyReused,
          'This Idempotency-Key was already used with a different request body.',
        );
      }
      if (existing.state === 'in_progress') {
        throw new DomainError(
          ErrorCode.IdempotencyKeyInUse,
          'A request with this Idempotency-Key is still running; retry when it has finished.',
        );
      }
      throw new ReplayedResponse(existing.responseStatus ?? 200, existing.responseBody, {
        ...(existing.responseHeaders ?? {}),
        'Idempotent-Replayed': 'true',
      });
    }

    let body: unknown;
    try {
      body = await lastValueFrom(next.handle(), { defaultValue: undefined });
    } catch (error) {
      await this.records.release(ref);
      throw error;
    }
    const status =
      this.reflector.get<number>(HTTP_CODE_METADATA, context.getHandler()) ??
      (request.method === 'POST' ? HttpStatus.CREATED : HttpStatus.OK);
    const headers: Record<string, string> = {};
    for (const name of REPLAYED_HEADERS) {
      const value = response.getHeader(name);
      if (value !== undefined) headers[name] = String(value);
    }
    await this.records.complete(ref, { status, body, headers });
    response.setHeader('Idempotent-Replayed', 'false');
    return body;
  }
}

/** Marks an endpoint as accepting `Idempotency-Key`. */
export const Idempotent = () =>
  applyDecorators(SetMetadata(IDEMPOTENT, true), UseInterceptors(IdempotencyInterceptor));
