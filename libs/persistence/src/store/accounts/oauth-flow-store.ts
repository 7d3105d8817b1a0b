/**
 * The console's OAuth sign-ins in progress (`console_oauth_flows`), keyed by the SHA-256 of their one-time
 * handle. A flow is consumed exactly once, with a `DELETE ... RETURNING` that also requires the same browser
 * session and account.
 */
import type { EntityManager } from 'typeorm';
import type { SideName } from '../../entities';

export interface OAuthFlowRow {
  handleHash: Buffer;
  stage: string;
  sessionHash: Buffer;
  accountId: string;
  syncId: string;
  side: SideName;
  connector: string;
  sealed: Buffer;
  expiresAt: Date;
}

export interface ConsumedFlowRow {
  sync_id: string;
  side: SideName;
  connector: string;
  sealed: Buffer;
  expired: boolean;
}

const DELETE_EXPIRED_SQL = `
  DELETE FROM console_oauth_flows WHERE expires_at < now()`;

const INSERT_SQL = `
  INSERT INTO console_oauth_flows
    (handle_hash, stage, session_hash, account_id, sync_id, side, connector, sealed, expires_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`;

const CONSUME_SQL = `
  DELETE FROM console_oauth_flows
   WHERE handle_hash = $1 AND stage = $2 AND session_hash = $3 AND account_id = $4
  RETURNING sync_id, side, connector, sealed, expires_at < now() AS expired`;

export class OAuthFlowStore {
  /** `db`: the data source's manager, or a transaction's. */
  constructor(private readonly db: EntityManager) {}

  /** Stores a flow, dropping every expired one first. */
  async save(flow: OAuthFlowRow): Promise<void> {
    await this.db.query(DELETE_EXPIRED_SQL);
    await this.db.query(INSERT_SQL, [
      flow.handleHash,
      flow.stage,
      flow.sessionHash,
      flow.accountId,
      flow.syncId,
      flow.side,
      flow.connector,
      flow.sealed,
      flow.expiresAt,
    ]);
  }

  /** Deletes and returns the flow of this handle, stage, session and account; null when there is none. */
  async consume(
    handleHash: Buffer,
    stage: string,
    sessionHash: Buffer,
    accountId: string,
  ): Promise<ConsumedFlowRow | null> {
    const [rows] = (await this.db.query(CONSUME_SQL, [handleHash, stage, sessionHash, accountId])) as [
      ConsumedFlowRow[],
      number,
    ];
    return rows[0] ?? null;
  }
}
