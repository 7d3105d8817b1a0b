import { createHash, randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import {
  CredentialCipher,
  OAuthFlowStore,
  oauthFlowOwner as owner,
  type SideName,
} from '@lockstep/persistence';

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
  private readonly store: OAuthFlowStore;

  constructor(
    @InjectDataSource() db: DataSource,
    private readonly cipher: CredentialCipher,
  ) {
    this.store = new OAuthFlowStore(db.manager);
  }

  async save<T extends object>(
    handle: string,
    stage: FlowStage,
    binding: FlowBinding,
    secrets: T,
  ): Promise<void> {
    const hash = sha256(handle);
    await this.store.save({
      handleHash: hash,
      stage,
      ...binding,
      sealed: this.cipher.encrypt({ json: JSON.stringify(secrets) }, owner(hash)),
      expiresAt: new Date(Date.now() + FLOW_TTL_MS),
    });
  }

  /** Deletes and returns the flow of this handle, stage, session and account; null when there is none. */
  async consume<T>(
    handle: string,
    stage: FlowStage,
    sessionHash: Buffer,
    accountId: string,
  ): Promise<ConsumedFlow<T> | null> {
    if (handle === '' || handle.length > 512) return null;
    const hash = sha256(handle);
    const row = await this.store.consume(hash, stage, sessionHash, accountId);
    if (!row) return null;
    const secrets = JSON.parse(this.cipher.decrypt(row.sealed, owner(hash))['json']!) as T;
    return {
      sessionHash,
      accountId,
      syncId: row.sync_id,
      side: row.side,
      connector: row.connector,
      secrets,
      expired: row.expired,
    };
  }
}
