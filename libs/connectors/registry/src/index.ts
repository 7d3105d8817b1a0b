/**
 * Every connector Lockstep offers. Adding a connector is one new package under libs/connectors/<type> and
 * one line here.
 */
import type { ConnectorDeclaration } from '@lockstep/connectors-core';
import { postgresConnector } from '@lockstep/connector-postgres';
import { mysqlConnector } from '@lockstep/connector-mysql';

export const CONNECTORS: readonly ConnectorDeclaration[] = Object.freeze([
  postgresConnector,
  mysqlConnector,
]);

export function findConnector(type: string): ConnectorDeclaration | undefined {
  return CONNECTORS.find((connector) => connector.type === type);
}
