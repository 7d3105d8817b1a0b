import { Injectable } from '@nestjs/common';
import { DomainError, ErrorCode } from '@lockstep/contracts';
import type { BaseInfo, ConnectorDeclaration, Credentials } from '@lockstep/connectors-core';
import { CredentialCipher } from '@lockstep/persistence';
import { SideConnections } from './side-connections';

/** A side whose credentials the app accepted and whose base resolved: ready to store. */
export interface BuiltSide {
  declaration: ConnectorDeclaration;
  credentials: Credentials;
  base: BaseInfo;
  fingerprint: string;
}

/**
 * Checks a side's credentials live and resolves its base (spec 4.2 rules 1-2). Nothing is stored here; the
 * caller stores only after every check of the request passed (rule 4).
 */
@Injectable()
export class SideBuilder {
  constructor(
    private readonly connections: SideConnections,
    private readonly cipher: CredentialCipher,
  ) {}

  /** `auth` as declared by the connector: strings under declared field ids, every required field present. */
  credentialsFrom(
    declaration: ConnectorDeclaration,
    auth: Record<string, unknown>,
    path: string,
  ): Credentials {
    if (declaration.auth.method !== 'api_key') throw new Error('credentialsFrom on an oauth connector');
    const declared = new Map(declaration.auth.fields.map((field) => [field.id, field]));
    const problems: { path: string; message: string }[] = [];
    const credentials: Credentials = {};
    for (const [key, value] of Object.entries(auth)) {
      if (!declared.has(key))
        problems.push({
          path: `${path}.${key}`,
          message:
            `${declaration.type} has no credential field "${key}"; it takes ` +
            `${[...declared.keys()].join(', ')}`,
        });
      else if (typeof value !== 'string')
        problems.push({ path: `${path}.${key}`, message: `${path}.${key} must be a string` });
      else if (value !== '') credentials[key] = value;
    }
    for (const field of declared.values()) {
      if (
        !field.optional &&
        credentials[field.id] === undefined &&
        !problems.some((p) => p.path === `${path}.${field.id}`)
      ) {
        problems.push({
          path: `${path}.${field.id}`,
          message: `${path}.${field.id} is required (${field.label})`,
        });
      }
    }
    if (problems.length > 0)
      throw new DomainError(ErrorCode.InvalidRequest, problems.map((p) => p.message).join('; '), {
        errors: problems,
      });
    return credentials;
  }

  /** Live: the app accepts the credentials, and `base` resolves by remote id, else by unique exact name. */
  async build(
    declaration: ConnectorDeclaration,
    credentials: Credentials,
    base: string,
    side: string,
  ): Promise<BuiltSide> {
    const bases = await this.connections.with(declaration, credentials, null, async (connection) => {
      await connection.checkCredentials();
      return connection.listBases();
    });
    return {
      declaration,
      credentials,
      base: resolveBase(bases, base, side),
      fingerprint: this.cipher.fingerprint(declaration.type, credentials),
    };
  }
}

export function resolveBase(bases: BaseInfo[], wanted: string, side: string): BaseInfo {
  const listed = bases.map((base) => ({ id: base.id, name: base.name }));
  const byId = bases.find((base) => base.id === wanted);
  if (byId) return byId;
  const byName = bases.filter((base) => base.name === wanted);
  if (byName.length === 1) return byName[0]!;
  if (byName.length > 1) {
    throw new DomainError(
      ErrorCode.BaseAmbiguous,
      `The ${side} side's base "${wanted}" matches ${byName.length} bases by name; send one of their ids.`,
      {
        side,
        bases: byName.map((base) => ({ id: base.id, name: base.name })),
      },
    );
  }
  throw new DomainError(
    ErrorCode.BaseNotFound,
    `The ${side} side's credentials reach no base with id or name "${wanted}".`,
    { side, bases: listed },
  );
}
