import { Injectable } from '@nestjs/common';
import { DomainError, ErrorCode } from '@lockstep/contracts';
import type { BaseInfo, Connection, ConnectorDeclaration, Credentials } from '@lockstep/connectors-core';
import { planIncludes } from '@lockstep/domain';
import { CredentialCipher, type LiveExportEntity, liveExportOwner } from '@lockstep/persistence';
import { ConnectorCatalog } from '../connectors/connector-catalog';
import { SideBuilder, resolveBase } from '../syncs/side-builder';
import { SideConnections } from '../syncs/side-connections';
import type { LiveExportSide } from './live-export-access';

/** A connector's live export roles as the connectors listing shows them. */
export function connectorRoles(declaration: ConnectorDeclaration): LiveExportSide[] {
  const roles: LiveExportSide[] = [];
  if (declaration.capabilities.liveExport.source) roles.push('source');
  if (declaration.capabilities.liveExport.destination) roles.push('destination');
  return roles;
}

/**
 * Connections to the two apps of a live export (egress policy from config; always closed). Connector failures
 * become `400 connection_failed` with the app's reason (credentials never in the message): on create and
 * PATCH nothing is stored then; on reads with stored credentials it means they stopped working.
 */
@Injectable()
export class LiveExportConnections {
  constructor(
    private readonly cipher: CredentialCipher,
    private readonly catalog: ConnectorCatalog,
    private readonly builder: SideBuilder,
    private readonly connections: SideConnections,
  ) {}

  /** A connector the account's plan unlocks and that can take `role`; `connector_not_supported` otherwise. */
  connectorFor(type: string, role: LiveExportSide, plan: string): ConnectorDeclaration {
    const declaration = this.catalog.find(type);
    const usable =
      declaration && planIncludes(plan, declaration.plan) && connectorRoles(declaration).includes(role);
    if (!declaration || !usable) {
      const offered = this.catalog
        .list()
        .filter((candidate) => planIncludes(plan, candidate.plan) && connectorRoles(candidate).includes(role))
        .map((candidate) => candidate.type);
      throw new DomainError(
        ErrorCode.ConnectorNotSupported,
        declaration
          ? `${declaration.displayName} cannot be a live export ${role}` +
              (planIncludes(plan, declaration.plan)
                ? ''
                : ` on this account's plan (it needs ${declaration.plan})`) +
              `; ${role} connectors: ${offered.join(', ') || 'none'}.`
          : `No connector "${type}"; ${role} connectors: ${offered.join(', ') || 'none'}.`,
        { side: role, connector: type, supported: offered },
      );
    }
    return declaration;
  }

  /**
   * `auth` of an api_key connector checked against its declared fields (`invalid_request` naming each
   * problem).
   */
  credentialsFrom(
    declaration: ConnectorDeclaration,
    auth: Record<string, unknown>,
    side: LiveExportSide,
  ): Credentials {
    if (declaration.auth.method !== 'api_key') {
      throw new DomainError(
        ErrorCode.OauthAuthNotAllowed,
        `${declaration.displayName} is connected by a person signing in through the browser; ` +
          `\`${side}.auth\` cannot be sent for it.`,
        { side },
      );
    }
    return this.builder.credentialsFrom(declaration, auth, `${side}.auth`);
  }

  async with<T>(
    declaration: ConnectorDeclaration,
    credentials: Credentials,
    base: string | null,
    side: LiveExportSide,
    work: (connection: Connection) => Promise<T>,
  ): Promise<T> {
    try {
      return await this.connections.with(declaration, credentials, base, work);
    } catch (error) {
      throw toConnectionFailed(error, side);
    }
  }

  /** Live: the credentials work and the source base resolves (by id, else unique exact name). */
  async checkSource(
    declaration: ConnectorDeclaration,
    credentials: Credentials,
    base: string,
  ): Promise<BaseInfo> {
    const bases = await this.with(declaration, credentials, null, 'source', async (connection) => {
      await connection.checkCredentials();
      return connection.listBases();
    });
    return resolveBase(bases, base, 'source');
  }

  /** Live: the credentials work; returns the destination's locations. */
  async checkDestination(declaration: ConnectorDeclaration, credentials: Credentials): Promise<BaseInfo[]> {
    return this.with(declaration, credentials, null, 'destination', async (connection) => {
      await connection.checkCredentials();
      return connection.listBases();
    });
  }

  credentials(entity: LiveExportEntity, side: LiveExportSide): Credentials {
    const sealed = side === 'source' ? entity.sourceCredentials : entity.destinationCredentials;
    if (!sealed) throw new Error(`the ${side} of ${entity.id} has no stored credentials`);
    return this.cipher.decrypt(sealed, liveExportOwner(entity.id, side));
  }

  seal(id: string, side: LiveExportSide, credentials: Credentials): Buffer {
    return this.cipher.encrypt(credentials, liveExportOwner(id, side));
  }

  declaration(entity: LiveExportEntity, side: LiveExportSide): ConnectorDeclaration {
    const type = side === 'source' ? entity.sourceConnector : entity.destinationConnector;
    const declaration = this.catalog.find(type);
    if (!declaration)
      throw new DomainError(
        ErrorCode.ConnectorNotSupported,
        `The ${side} uses connector "${type}", which this server no longer offers.`,
        { side, connector: type },
      );
    return declaration;
  }

  /** The source with its stored credentials and base. */
  withSource<T>(entity: LiveExportEntity, work: (connection: Connection) => Promise<T>): Promise<T> {
    return this.with(
      this.declaration(entity, 'source'),
      this.credentials(entity, 'source'),
      entity.sourceBase,
      'source',
      work,
    );
  }

  /**
   * The destination with its stored credentials; the connection's base is `location` (default: the stored
   * one).
   */
  withDestination<T>(
    entity: LiveExportEntity,
    work: (connection: Connection) => Promise<T>,
    location: string | null = entity.destinationLocation,
  ): Promise<T> {
    return this.with(
      this.declaration(entity, 'destination'),
      this.credentials(entity, 'destination'),
      location,
      'destination',
      work,
    );
  }
}

/** The sync side's `invalid_auth` / `connection_error` are live export's one `connection_failed`. */
export function toConnectionFailed(error: unknown, side: LiveExportSide): unknown {
  if (
    error instanceof DomainError &&
    (error.code === ErrorCode.InvalidAuth || error.code === ErrorCode.ConnectionError)
  ) {
    return new DomainError(ErrorCode.ConnectionFailed, `The ${side} app: ${error.message}`, {
      side,
      ...(error.details ?? {}),
    });
  }
  return error;
}

/**
 * A location named by id, else by unique exact name; `invalid_location` listing the offered ones otherwise.
 */
export function resolveLocation(locations: BaseInfo[], wanted: string): BaseInfo {
  const byId = locations.find((location) => location.id === wanted);
  if (byId) return byId;
  const byName = locations.filter((location) => location.name === wanted);
  if (byName.length === 1) return byName[0]!;
  throw new DomainError(
    ErrorCode.InvalidLocation,
    byName.length > 1
      ? `Location "${wanted}" matches ${byName.length} locations of the destination by name; send one ` +
          `of their ids.`
      : `The destination offers no location "${wanted}"; pick one of GET .../destination/locations.`,
    { locations: locations.map((location) => ({ id: location.id, name: location.name })) },
  );
}
