import { Injectable } from '@nestjs/common';
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { AppConfig } from '@lockstep/config';
import { DomainError, ErrorCode } from '@lockstep/contracts';

/** Keyset position of the last item of a page, newest first: `(created_at, id)`. */
export interface CursorPosition {
  createdAt: string;
  id: string;
}

/** `invalid_cursor`: a cursor this endpoint did not issue (or one whose position it no longer reads). */
export function invalidCursor(): DomainError {
  return new DomainError(
    ErrorCode.InvalidCursor,
    'cursor was not issued by this endpoint; pass back `next_cursor` unchanged.',
  );
}

export interface LimitRule {
  min: number;
  max: number;
  default: number;
}

/** `limit` validation (`invalid_limit`): an integer within the endpoint's range; absent means the default. */
export function parseLimit(raw: unknown, rule: LimitRule): number {
  if (raw === undefined || raw === null || raw === '') return rule.default;
  const text = String(raw);
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < rule.min || value > rule.max) {
    throw new DomainError(
      ErrorCode.InvalidLimit,
      `limit must be an integer from ${rule.min} to ${rule.max}.`,
      { min: rule.min, max: rule.max },
    );
  }
  return value;
}

/**
 * Opaque cursors: `base64url(payload).base64url(hmac)`, the payload naming the endpoint and the account. A
 * cursor from another endpoint or account, or a tampered one, is `invalid_cursor`. Keyset positions make
 * pages stable under inserts (new items appear before the first page, never twice).
 */
@Injectable()
export class CursorService {
  /**
   * Signs with the current master key; also verifies with the previous ones, so cursors survive a rotation.
   */
  private readonly keys: Buffer[];

  constructor(config: AppConfig) {
    const derive = (master: string) =>
      Buffer.from(
        hkdfSync('sha256', Buffer.from(master, 'base64'), Buffer.alloc(0), 'lockstep cursor v1', 32),
      );
    this.keys = [config.LOCKSTEP_MASTER_KEY, ...(config.LOCKSTEP_MASTER_KEY_PREVIOUS ?? [])].map(derive);
  }

  encode(endpoint: string, accountId: string, position: CursorPosition): string {
    const payload = Buffer.from(
      JSON.stringify({ e: endpoint, a: accountId, c: position.createdAt, i: position.id }),
    ).toString('base64url');
    return `${payload}.${this.sign(payload)}`;
  }

  decode(cursor: unknown, endpoint: string, accountId: string): CursorPosition | null {
    if (cursor === undefined || cursor === null || cursor === '') return null;
    const invalid = invalidCursor;
    if (typeof cursor !== 'string' || cursor.length > 1000) throw invalid();
    const [payload, signature, extra] = cursor.split('.');
    if (!payload || !signature || extra !== undefined) throw invalid();
    if (!this.verify(payload, signature)) throw invalid();
    let data: { e?: unknown; a?: unknown; c?: unknown; i?: unknown };
    try {
      data = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      throw invalid();
    }
    if (
      data.e !== endpoint ||
      data.a !== accountId ||
      typeof data.c !== 'string' ||
      typeof data.i !== 'string'
    )
      throw invalid();
    return { createdAt: data.c, id: data.i };
  }

  /** Builds the envelope of spec 2.2 from `limit + 1` rows fetched newest first. */
  page<T, R>(
    rows: R[],
    limit: number,
    endpoint: string,
    accountId: string,
    position: (row: R) => CursorPosition,
    map: (row: R) => T,
  ) {
    const hasMore = rows.length > limit;
    const items = hasMore ? rows.slice(0, limit) : rows;
    const last = items[items.length - 1];
    return {
      data: items.map(map),
      has_more: hasMore,
      next_cursor: hasMore && last ? this.encode(endpoint, accountId, position(last)) : null,
    };
  }

  private sign(payload: string, key = this.keys[0]!): string {
    return createHmac('sha256', key).update(payload).digest('base64url').slice(0, 22);
  }

  private verify(payload: string, signature: string): boolean {
    const given = Buffer.from(signature);
    return this.keys.some((key) => {
      const expected = Buffer.from(this.sign(payload, key));
      return expected.length === given.length && timingSafeEqual(expected, given);
    });
  }
}
