/**
 * Every connector Lockstep offers. Adding a built-in connector is one new package under
 * libs/connectors/<type> and one line in `BUILT_IN`; a self-hoster adds connectors without forking through
 * connector plugins (`CONNECTOR_PLUGINS`, see `loadConnectorPlugins`), registered once at boot.
 *
 * Built-ins come from each package's `/declaration` entry, which loads its driver only on the first
 * `connect()`: importing this catalogue loads no `pg` or `mysql2`, nor an app connector's HTTP code
 * (declarations.spec.ts).
 */
import { createRequire } from 'node:module';
import { isAbsolute, join, resolve } from 'node:path';
import {
  assertHostAllowed,
  type ConnectorDeclaration,
  ConnectorError,
  credentialSecrets,
  defineConnector,
  isConnectorError,
  redactSecrets,
} from '@lockstep/connectors-core';
import { postgresConnector } from '@lockstep/connector-postgres/declaration';
import { mysqlConnector } from '@lockstep/connector-mysql/declaration';
import { airtableConnector } from '@lockstep/connector-airtable/declaration';
import { nocodbConnector } from '@lockstep/connector-nocodb/declaration';
import { declarationProblems } from './validate';

export { declarationProblems } from './validate';

const BUILT_IN: readonly ConnectorDeclaration[] = [
  postgresConnector,
  mysqlConnector,
  airtableConnector,
  nocodbConnector,
];

const registered: ConnectorDeclaration[] = [...BUILT_IN];

/**
 * The built-in connectors followed by every registered plugin connector. A live view: connectors registered
 * at boot appear here, so read it after boot (the API's catalog and the engine do).
 */
export const CONNECTORS: readonly ConnectorDeclaration[] = registered;

export function findConnector(type: string): ConnectorDeclaration | undefined {
  return registered.find((connector) => connector.type === type);
}

/**
 * Thrown for a plugin that cannot be loaded or declares something unsound; the message says what and where.
 */
export class ConnectorPluginError extends Error {
  override name = 'ConnectorPluginError';
}

/**
 * Adds connectors after checking each declaration and refusing a type that is already offered (built in,
 * registered before, or twice in `declarations`). All or nothing: on any problem nothing is added.
 */
export function registerConnectors(
  declarations: readonly unknown[],
  source = 'registerConnectors',
): ConnectorDeclaration[] {
  const problems: string[] = [];
  const types = new Set(registered.map((connector) => connector.type));
  const accepted: ConnectorDeclaration[] = [];
  declarations.forEach((declaration, index) => {
    const label =
      typeof (declaration as { type?: unknown })?.type === 'string'
        ? `connector "${(declaration as { type: string }).type}"`
        : `connector #${index + 1}`;
    const own = declarationProblems(declaration);
    if (own.length > 0) return void problems.push(...own.map((problem) => `${label}: ${problem}`));
    const sound = declaration as ConnectorDeclaration;
    if (types.has(sound.type))
      return void problems.push(`${label}: the type "${sound.type}" is already offered by another connector`);
    types.add(sound.type);
    accepted.push(Object.isFrozen(sound) ? sound : defineConnector(sound));
  });
  if (declarations.length === 0) problems.push('exports no connector declaration');
  if (problems.length > 0) throw new ConnectorPluginError(`${source}: ${problems.join('; ')}`);
  registered.push(...accepted);
  return accepted;
}

/**
 * What a plugin's exported function receives: the connector SDK, so a plugin needs no import of Lockstep's
 * own packages (which are not published) to declare a connector and throw its errors.
 */
export const CONNECTOR_PLUGIN_SDK = Object.freeze({
  defineConnector,
  ConnectorError,
  isConnectorError,
  redactSecrets,
  credentialSecrets,
  assertHostAllowed,
});
export type ConnectorPluginSdk = typeof CONNECTOR_PLUGIN_SDK;

const loadedPlugins = new Map<string, ConnectorDeclaration[]>();

/** The declarations a plugin module exports, in any of the documented shapes. */
function exportedDeclarations(exported: unknown): unknown[] {
  let value = exported;
  if (
    typeof value === 'object' &&
    value !== null &&
    'default' in value &&
    !('type' in value) &&
    !('connectors' in value)
  )
    value = (value as { default: unknown }).default;
  if (typeof value === 'function')
    value = (value as (sdk: ConnectorPluginSdk) => unknown)(CONNECTOR_PLUGIN_SDK);
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && 'connectors' in value)
    value = (value as { connectors: unknown }).connectors;
  if (value === undefined || value === null) return [];
  return Array.isArray(value) ? value : [value];
}

/**
 * Loads connector plugins (`CONNECTOR_PLUGINS`): each path is a module `require()` can load (an absolute
 * path, a path relative to `cwd`, or an installed package name). A module exports a declaration, an array
 * of them, `{ connectors: [...] }`, or a function `(sdk) => declaration(s)` that receives
 * `CONNECTOR_PLUGIN_SDK`. Loading the same module again is a no-op, so every entry point may call this at
 * boot. Throws `ConnectorPluginError` naming the module and every problem; nothing of a bad module is added.
 */
export function loadConnectorPlugins(
  paths: readonly string[],
  cwd: string = process.cwd(),
): ConnectorDeclaration[] {
  const requireFrom = createRequire(join(cwd, 'connector-plugins.js'));
  const added: ConnectorDeclaration[] = [];
  for (const entry of paths) {
    const spec = entry.trim();
    if (spec === '') continue;
    const request = isAbsolute(spec) || spec.startsWith('.') ? resolve(cwd, spec) : spec;
    let file: string;
    try {
      file = requireFrom.resolve(request);
    } catch {
      throw new ConnectorPluginError(`connector plugin "${spec}": no module found (looked for ${request})`);
    }
    if (loadedPlugins.has(file)) continue;
    let declarations: unknown[];
    try {
      declarations = exportedDeclarations(requireFrom(file));
    } catch (error) {
      throw new ConnectorPluginError(
        `connector plugin "${spec}": failed to load: ` +
          `${error instanceof Error ? error.message : String(error)}`,
      );
    }
    const accepted = registerConnectors(declarations, `connector plugin "${spec}"`);
    loadedPlugins.set(file, accepted);
    added.push(...accepted);
  }
  return added;
}
