import { Injectable } from '@nestjs/common';
import type { ConnectorDeclaration } from '@lockstep/connectors-core';
import { CONNECTORS } from '@lockstep/connectors-registry';
import { planIncludes } from '@lockstep/domain';

/**
 * The connectors this API offers: the registry's list. `add()` lets an embedding (and the e2e tests, which
 * need a browser-sign-in connector and one above the free plan) offer more without touching the registry.
 */
@Injectable()
export class ConnectorCatalog {
  private readonly declarations: ConnectorDeclaration[] = [...CONNECTORS];

  list(): readonly ConnectorDeclaration[] {
    return this.declarations;
  }

  find(type: string): ConnectorDeclaration | undefined {
    return this.declarations.find((connector) => connector.type === type);
  }

  /** A connector of that type the account's plan unlocks, or undefined. */
  available(type: unknown, plan: string): ConnectorDeclaration | undefined {
    if (typeof type !== 'string') return undefined;
    const connector = this.find(type);
    return connector && planIncludes(plan, connector.plan) ? connector : undefined;
  }

  add(declaration: ConnectorDeclaration): void {
    if (this.find(declaration.type)) throw new Error(`connector "${declaration.type}" is already listed`);
    this.declarations.push(declaration);
  }
}
