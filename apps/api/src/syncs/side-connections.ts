import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig } from '@lockstep/config';
import { DomainError, ErrorCode } from '@lockstep/contracts';
import {
  type Connection,
  type ConnectorCoordination,
  type ConnectorDeclaration,
  type Credentials,
  isConnectorError,
  redactSecrets,
} from '@lockstep/connectors-core';
import { coordinationPrefix, RedisCoordination } from '@lockstep/connectors-http';
import {
  CredentialCipher,
  markCredentialRejected,
  SideCredentialStore,
  sideOwner,
  type SyncSideEntity,
} from '@lockstep/persistence';
import { ConnectorCatalog } from '../connectors/connector-catalog';
import { RedisClient } from '../common/redis/redis.module';

/** Where a connector failure surfaced: credentials a client just sent, or credentials already stored. */
export type FailureContext = 'request' | 'stored';

/**
 * Opens connections to the apps behind a sync's sides (with the egress policy from config, and the rate
 * budgets the API shares with the workers through Redis: `ConnectContext.shared`), always closes
 * them, and turns a `ConnectorError` into the API's error: rejected credentials are `invalid_auth` (the
 * app's reason in the message), an unreachable app is `connection_error`. Messages never carry credentials.
 */
@Injectable()
export class SideConnections {
  private readonly shared: ConnectorCoordination;

  constructor(
    private readonly config: AppConfig,
    private readonly cipher: CredentialCipher,
    private readonly catalog: ConnectorCatalog,
    @InjectDataSource() private readonly dataSource: DataSource,
    redis: RedisClient,
  ) {
    this.shared = new RedisCoordination(redis.client, coordinationPrefix(config.QUEUE_PREFIX));
  }

  /**
   * A connection with `credentials`; `stored` names the side they are stored for, so credentials the
   * connection renews (a signed-in side's access token) are saved back there
   * (`ConnectContext.credentialStore`).
   */
  async with<T>(
    declaration: ConnectorDeclaration,
    credentials: Credentials,
    base: string | null,
    work: (connection: Connection) => Promise<T>,
    stored?: Pick<SyncSideEntity, 'syncId' | 'side'>,
  ): Promise<T> {
    let connection: Connection | undefined;
    const oauthClient = this.config.connectorOAuthClient(declaration.type);
    try {
      connection = await declaration.connect(credentials, base, {
        egress: {
          allowPrivate: this.config.EGRESS_ALLOW_PRIVATE,
          allowLoopback: this.config.EGRESS_ALLOW_LOOPBACK,
        },
        poolSize: 2,
        shared: this.shared,
        settings: this.config.connectorSettings,
        ...(oauthClient ? { oauthClient } : {}),
        ...(stored
          ? {
              credentialStore: new SideCredentialStore(
                this.dataSource.manager,
                this.cipher,
                stored.syncId,
                stored.side,
              ),
            }
          : {}),
      });
      return await work(connection);
    } catch (error) {
      throw translateConnectorError(error, credentials);
    } finally {
      await connection?.close().catch(() => undefined);
    }
  }

  /** A connection with a side's stored credentials and base. */
  async withSide<T>(side: SyncSideEntity, work: (connection: Connection) => Promise<T>): Promise<T> {
    const declaration = this.catalog.find(side.connector);
    if (!declaration)
      throw new DomainError(
        ErrorCode.UnknownConnector,
        `The ${side.side} side uses connector "${side.connector}", which this server no longer offers.`,
      );
    if (!side.credentials) throw new Error(`side ${side.side} of ${side.syncId} has no stored credentials`);
    return this.with(declaration, this.credentials(side), side.baseId, work, side);
  }

  /**
   * Like `withSide`, and when the app rejects the stored credentials the side is marked broken
   * (`auth_status: error`) with a `connection` issue explaining the fix, before the error is rethrown.
   */
  async withStoredSide<T>(side: SyncSideEntity, work: (connection: Connection) => Promise<T>): Promise<T> {
    try {
      return await this.withSide(side, work);
    } catch (error) {
      if (error instanceof DomainError && error.code === ErrorCode.InvalidAuth) {
        const name = this.catalog.find(side.connector)?.displayName ?? side.connector;
        await markCredentialRejected(this.dataSource, {
          syncId: side.syncId,
          side: side.side,
          connector: side.connector,
          connectorName: name,
          reason: error.message.replace(/^The app rejected the credentials: /, ''),
          reconnectUrl: `${this.config.publicUrl}/app/syncs/${side.syncId}/connect/${side.side}`,
        });
        side.authStatus = 'error';
        side.authError = 'invalid_credentials';
      }
      throw error;
    }
  }

  credentials(side: SyncSideEntity): Credentials {
    if (!side.credentials) throw new Error(`side ${side.side} of ${side.syncId} has no stored credentials`);
    return this.cipher.decrypt(side.credentials, sideOwner(side.syncId, side.side));
  }
}

/** ConnectorError -> DomainError; anything else passes through unchanged (a bug stays a 500). */
export function translateConnectorError(error: unknown, credentials: Credentials = {}): unknown {
  if (!isConnectorError(error)) return error;
  const secrets = Object.values(credentials).filter(
    (value) => typeof value === 'string' && value.length >= 4,
  );
  const reason = redactSecrets(error.message, secrets);
  const details = { connector_error: error.kind, ...(error.appCode ? { app_code: error.appCode } : {}) };
  switch (error.kind) {
    case 'auth':
    case 'invalid_data':
    case 'unsupported':
      return new DomainError(ErrorCode.InvalidAuth, `The app rejected the credentials: ${reason}`, details);
    case 'permission':
      if (error.appCode === 'EGRESS_REFUSED' || reason.includes('egress policy')) {
        return new DomainError(ErrorCode.ConnectionError, `The app cannot be reached: ${reason}`, details);
      }
      return new DomainError(ErrorCode.InvalidAuth, `The app rejected the credentials: ${reason}`, details);
    case 'not_found':
    case 'rate_limited':
    case 'transient':
    case 'changed':
      return new DomainError(
        ErrorCode.ConnectionError,
        `The app cannot be reached with these credentials: ${reason}`,
        details,
      );
  }
}
