/**
 * `Idempotency-Key` records (`idempotency_records`), one per account, endpoint and key: claimed with one
 * INSERT (so two concurrent requests cannot both run), completed with the response to replay, or released
 * when the request failed.
 */
import type { EntityManager } from 'typeorm';
import { IdempotencyRecordEntity } from '../../entities';

export interface IdempotencyKeyRef {
  accountId: string;
  endpoint: string;
  key: string;
}

export interface IdempotentResponse {
  status: number;
  body: unknown;
  headers: Record<string, string>;
}

// Expired rows are taken over.
const CLAIM_SQL = `
  INSERT INTO idempotency_records (account_id, endpoint, key, fingerprint, state, expires_at)
  VALUES ($1, $2, $3, $4, 'in_progress', $5)
  ON CONFLICT (account_id, endpoint, key) DO UPDATE
    SET fingerprint = EXCLUDED.fingerprint, state = 'in_progress', response_status = NULL,
        response_body = NULL, response_headers = NULL, created_at = now(), expires_at = EXCLUDED.expires_at
    WHERE idempotency_records.expires_at < now()
  RETURNING key`;

export class IdempotencyStore {
  /** `db`: the data source's manager, or a transaction's. */
  constructor(private readonly db: EntityManager) {}

  private get records() {
    return this.db.getRepository(IdempotencyRecordEntity);
  }

  /** Inserts the in-progress row; false when a live row holds the key. */
  async claim(ref: IdempotencyKeyRef, fingerprint: string, expiresAt: Date): Promise<boolean> {
    const rows: unknown[] = await this.db.query(CLAIM_SQL, [
      ref.accountId,
      ref.endpoint,
      ref.key,
      fingerprint,
      expiresAt,
    ]);
    return rows.length === 1;
  }

  async find(ref: IdempotencyKeyRef): Promise<IdempotencyRecordEntity | null> {
    return this.records.findOneBy({ accountId: ref.accountId, endpoint: ref.endpoint, key: ref.key });
  }

  /** Frees the key (the request failed: a retry runs it again). */
  async release(ref: IdempotencyKeyRef): Promise<void> {
    await this.records.delete({ accountId: ref.accountId, endpoint: ref.endpoint, key: ref.key });
  }

  /** Records the response that later requests with the key replay. */
  async complete(ref: IdempotencyKeyRef, response: IdempotentResponse): Promise<void> {
    await this.records.update(
      { accountId: ref.accountId, endpoint: ref.endpoint, key: ref.key },
      {
        state: 'completed',
        responseStatus: response.status,
        responseBody: response.body as object,
        responseHeaders: response.headers,
      },
    );
  }
}
