import { createHash, randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { CredentialCipher, oauthFlowOwner as owner, type SideName } from '@lockstep/persistence';

/** How long a person has to finish signing in at the app, and to pick a base afterwards. */
export const FLOW_TTL_MS = 10 * 60 * 1000;

export type FlowStage = 'authorize' | 'choose_base';

/** What a flow row binds together (the handle itself is only stored as its SHA-256). */
export interface FlowBinding {
  sessionHash: Buffer;
  accountId: string;
  syncId: string;
  side: SideName;
  connector: string;
}

export interface ConsumedFlow<T> extends FlowBinding {
  secrets: T;
  expired: boolean;
}

interface FlowRow {
  sync_id: string;
  side: SideName;
  connector: string;
  sealed: Buffer;
  expired: boolean;
}

const sha256 = (text: string): Buffer => createHash('sha256').update(text).digest();

/** A one-time handle for the base picker (the `state` of the authorize stage comes from openid-client). */
export const newHandle = (): string => randomBytes(32).toString('base64url');

/**
 * The console's OAuth sign-ins in progress (`console_oauth_flows`): stored at start, consumed exactly once by
 * the callback (or the base picker) with a `DELETE ... RETURNING` that also requires the same browser session
 * and account, so a replayed, forged or foreign `state` finds nothing. Secrets are sealed with the credential
 * cipher, bound to the handle.
 */
@Injectable()
export class OAuthFlows {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly cipher: CredentialCipher,
  ) {}

  async save<T extends object>(handle: string, stage: FlowStage, binding: FlowBinding, secrets: T): Promise<void> {
    const hash = sha256(handle);
    await this.db.query(`DELETE FROM console_oauth_flows WHERE expires_at < now()`);
    await this.db.query(
      `INSERT INTO console_oauth_flows (handle_hash, stage, session_hash, account_id, sync_id, side, connector, sealed, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [hash, stage, binding.sessionHash, binding.accountId, binding.syncId, binding.side, binding.connector, this.cipher.encrypt({ json: JSON.stringify(secrets) }, owner(hash)), new Date(Date.now() + FLOW_TTL_MS)],
    );
  }

  /** Deletes and returns the flow of this handle, stage, session and account; null when there is none. */
  async consume<T>(handle: string, stage: FlowStage, sessionHash: Buffer, accountId: string): Promise<ConsumedFlow<T> | null> {
    if (handle === '' || handle.length > 512) return null;
    const hash = sha256(handle);
    const [rows] = (await this.db.query(
      `DELETE FROM console_oauth_flows WHERE handle_hash = $1 AND stage = $2 AND session_hash = $3 AND account_id = $4
       RETURNING sync_id, side, connector, sealed, expires_at < now() AS expired`,
      [hash, stage, sessionHash, accountId],
    )) as [FlowRow[], number];
    const row = rows[0];
    if (!row) return null;
    const secrets = JSON.parse(this.cipher.decrypt(row.sealed, owner(hash))['json']!) as T;
    return { sessionHash, accountId, syncId: row.sync_id, side: row.side, connector: row.connector, secrets, expired: row.expired };
  }
}
