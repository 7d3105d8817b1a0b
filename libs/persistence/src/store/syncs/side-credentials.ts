/**
 * A sync side's stored credentials as a running connection sees them (`ConnectContext.credentialStore`): an
 * app connector whose credentials change while it runs (an OAuth access token renewed with a refresh token
 * that works once) reads them back and saves the renewed ones, sealed with the side's key like any credential.
 * A save replaces exactly the credentials the same store read last (compare-and-set on the sealed bytes), so a
 * renewal never overwrites credentials a person connected meanwhile.
 */
import type { SideName } from '@lockstep/domain';
import { type CredentialCipher, sideOwner } from '../../credentials/credential-cipher';
import { type Db, returnedRows } from '../db';

const LOAD_SQL = `SELECT credentials FROM sync_sides WHERE sync_id = $1 AND side = $2`;

const SAVE_SQL = `
  UPDATE sync_sides SET credentials = $4, updated_at = now()
   WHERE sync_id = $1 AND side = $2 AND credentials = $3
  RETURNING sync_id`;

export class SideCredentialStore {
  /** The renewal lock's key (never a secret). */
  readonly key: string;
  /** The sealed credentials read last: what a save may replace. */
  private loaded: Buffer | null = null;

  constructor(
    private readonly db: Db,
    private readonly cipher: CredentialCipher,
    private readonly syncId: string,
    private readonly side: SideName,
  ) {
    this.key = `sync:${syncId}:${side}`;
  }

  async load(): Promise<Record<string, string>> {
    const rows: { credentials: Buffer | null }[] = await this.db.query(LOAD_SQL, [this.syncId, this.side]);
    const sealed = rows[0]?.credentials ?? null;
    if (!sealed) throw new Error(`the ${this.side} side of ${this.syncId} has no stored credentials`);
    this.loaded = sealed;
    return this.cipher.decrypt(sealed, sideOwner(this.syncId, this.side));
  }

  /** False, storing nothing, when the side holds other credentials than those read last. */
  async save(credentials: Record<string, string>): Promise<boolean> {
    if (!this.loaded) return false;
    const sealed = this.cipher.encrypt(credentials, sideOwner(this.syncId, this.side));
    const saved = returnedRows(
      await this.db.query(SAVE_SQL, [this.syncId, this.side, this.loaded, sealed]),
    ).length;
    if (saved === 0) return false;
    this.loaded = sealed;
    return true;
  }
}
