import type { ConnectorDeclaration } from '@lockstep/connectors-core';

/** Every connector Lockstep offers. Adding a connector: one new package under libs/connectors and one line here. */
export const CONNECTORS: readonly ConnectorDeclaration[] = [];

export function findConnector(type: string): ConnectorDeclaration | undefined {
  return CONNECTORS.find((c) => c.type === type);
}
