/**
 * A sync side's connection for the engine: opened on first use with the side's decrypted credentials and
 * the sync id as write origin (so the change feed marks exactly this sync's writes as its own), closed again
 * after a few idle seconds so that hundreds of idle syncs hold no database connections.
 */
import type { Connection, ConnectorCoordination, OAuthClientRegistration } from '@lockstep/connectors-core';
import { findConnector } from '@lockstep/connectors-registry';
import {
  type CredentialCipher,
  type Db,
  SideCredentialStore,
  sideOwner,
  type SyncSideEntity,
} from '@lockstep/persistence';
import type { SideName } from '@lockstep/domain';

export interface EgressSettings {
  allowPrivate: boolean;
  allowLoopback: boolean;
}

export interface RenewalSettings {
  db: Db;
  oauthClient(type: string): OAuthClientRegistration | undefined;
}

export class SideSession {
  private connection: Connection | null = null;
  private opening: Promise<Connection> | null = null;
  private lastUsed = 0;
  private busy = 0;

  constructor(
    readonly syncId: string,
    readonly side: SideName,
    private entity: SyncSideEntity,
    private readonly cipher: CredentialCipher,
    private readonly egress: EgressSettings,
    private readonly shared?: ConnectorCoordination,
    /** The service's settings connectors read (`ConnectContext.settings`). */
    private readonly settings?: Readonly<Record<string, string | undefined>>,
    /**
     * Where renewed credentials are saved (`ConnectContext.credentialStore` on the side's row) and the
     * operator's OAuth client registrations (`OAUTH_CLIENTS`) a signed-in side renews its token with.
     */
    private readonly renewal?: RenewalSettings,
  ) {}

  get connector(): string {
    return this.entity.connector;
  }

  get fingerprint(): string {
    return `${this.entity.connector}|${this.entity.credentialFingerprint ?? ''}|${this.entity.baseId ?? ''}`;
  }

  /** New credentials or base: the next use reconnects. */
  async refresh(entity: SyncSideEntity): Promise<void> {
    const changed =
      entity.credentialFingerprint !== this.entity.credentialFingerprint ||
      entity.baseId !== this.entity.baseId ||
      entity.connector !== this.entity.connector;
    this.entity = entity;
    if (changed) await this.close();
  }

  async use<T>(work: (connection: Connection) => Promise<T>): Promise<T> {
    this.busy += 1;
    try {
      const connection = await this.open();
      return await work(connection);
    } catch (error) {
      // The runner decides what a failure means from the connector's kind and the side it came from.
      if (typeof error === 'object' && error !== null && !('side' in error))
        Object.assign(error, { side: this.side });
      throw error;
    } finally {
      this.busy -= 1;
      this.lastUsed = Date.now();
    }
  }

  private async open(): Promise<Connection> {
    if (this.connection) return this.connection;
    if (!this.opening) {
      this.opening = this.connect(this.syncId);
    }
    try {
      this.connection = await this.opening;
      return this.connection;
    } finally {
      this.opening = null;
    }
  }

  /**
   * A new connection with the side's credentials; `writeOrigin` tags its writes (none for a read-only
   * watcher).
   */
  async connect(writeOrigin?: string): Promise<Connection> {
    const declaration = findConnector(this.entity.connector);
    if (!declaration) throw new Error(`connector ${this.entity.connector} is not installed`);
    if (!this.entity.credentials)
      throw new Error(`the ${this.side} side of ${this.syncId} has no credentials`);
    const credentials = this.cipher.decrypt(this.entity.credentials, sideOwner(this.syncId, this.side));
    const shared = this.shared ? { shared: this.shared } : {};
    const oauthClient = this.renewal?.oauthClient(declaration.type);
    return declaration.connect(credentials, this.entity.baseId, {
      egress: this.egress,
      poolSize: 1,
      ...shared,
      ...(this.settings ? { settings: this.settings } : {}),
      ...(writeOrigin ? { writeOrigin } : {}),
      ...(oauthClient ? { oauthClient } : {}),
      ...(this.renewal
        ? { credentialStore: new SideCredentialStore(this.renewal.db, this.cipher, this.syncId, this.side) }
        : {}),
    });
  }

  /** Closes the connection when unused for `idleMs`. */
  async closeIfIdle(idleMs: number): Promise<void> {
    if (this.connection && this.busy === 0 && Date.now() - this.lastUsed > idleMs) await this.close();
  }

  async close(): Promise<void> {
    const connection = this.connection;
    this.connection = null;
    if (connection) await connection.close().catch(() => undefined);
  }
}
