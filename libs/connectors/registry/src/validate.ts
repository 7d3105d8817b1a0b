/**
 * Checks a connector declaration that did not come through the compiler (a connector plugin): every field
 * the API, the console and the engine read, with one message per problem.
 */
import type { ConnectorDeclaration } from '@lockstep/connectors-core';
import { PLANS } from '@lockstep/domain';

const CHANGE_DETECTION = ['change_feed', 'incremental', 'full_scan'];
const LOCATION_KINDS = ['schema', 'database', 'base', null];

type Problems = string[];
type Obj = Record<string, unknown>;

const isObject = (value: unknown): value is Obj =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isText = (value: unknown): value is string => typeof value === 'string' && value.trim() !== '';

function httpUrl(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:';
  } catch {
    return false;
  }
}

function checkFields(fields: unknown, problems: Problems): void {
  if (!Array.isArray(fields) || fields.length === 0) {
    problems.push('auth.fields must be a non-empty array for api_key auth');
    return;
  }
  const ids = new Set<string>();
  fields.forEach((field: unknown, index) => {
    const at = `auth.fields[${index}]`;
    if (!isObject(field)) return void problems.push(`${at} must be an object`);
    if (!isText(field['id'])) problems.push(`${at}.id must be a non-empty string`);
    else if (ids.has(field['id'])) problems.push(`${at}.id "${field['id']}" is declared twice`);
    else ids.add(field['id']);
    if (!isText(field['label'])) problems.push(`${at}.label must be a non-empty string`);
    if (typeof field['optional'] !== 'boolean') problems.push(`${at}.optional must be a boolean`);
    if (typeof field['placeholder'] !== 'string') problems.push(`${at}.placeholder must be a string`);
    const options = field['options'];
    if (
      options !== null &&
      !(Array.isArray(options) && options.every((option) => typeof option === 'string'))
    )
      problems.push(`${at}.options must be null or an array of strings`);
    const help = field['help'];
    if (!isObject(help) || !isText(help['label']) || !httpUrl(help['url']))
      problems.push(`${at}.help must be {label, url} with an http(s) url`);
    if (field['secret'] !== undefined && typeof field['secret'] !== 'boolean')
      problems.push(`${at}.secret must be a boolean when given`);
  });
}

function checkAuth(auth: unknown, problems: Problems): void {
  if (!isObject(auth)) return void problems.push('auth must be an object');
  if (auth['method'] === 'api_key') {
    checkFields(auth['fields'], problems);
    // An app that also offers a browser sign-in (spec 2.6) declares its endpoints the same way.
    if (auth['oauth'] !== undefined) checkSignIn(auth['oauth'], problems);
    return;
  }
  if (auth['method'] !== 'oauth') return void problems.push('auth.method must be "api_key" or "oauth"');
  if (auth['fields'] !== null) problems.push('auth.fields must be null for oauth auth');
  checkSignIn(auth['oauth'], problems);
}

function checkSignIn(oauth: unknown, problems: Problems): void {
  if (!isObject(oauth))
    return void problems.push(
      'auth.oauth must be an object with authorizationEndpoint, tokenEndpoint and scopes',
    );
  if (!httpUrl(oauth['authorizationEndpoint']))
    problems.push('auth.oauth.authorizationEndpoint must be an http(s) URL');
  if (!httpUrl(oauth['tokenEndpoint'])) problems.push('auth.oauth.tokenEndpoint must be an http(s) URL');
  if (oauth['issuer'] !== undefined && !httpUrl(oauth['issuer']))
    problems.push('auth.oauth.issuer must be an http(s) URL when given');
  if (oauth['originSetting'] !== undefined && !isText(oauth['originSetting']))
    problems.push('auth.oauth.originSetting must be a setting name when given');
  const scopes = oauth['scopes'];
  if (
    !Array.isArray(scopes) ||
    !scopes.every((scope) => typeof scope === 'string' && /^[\x21\x23-\x5B\x5D-\x7E]+$/.test(scope))
  ) {
    problems.push('auth.oauth.scopes must be an array of scope tokens (no spaces or quotes)');
  }
}

function checkCapabilities(capabilities: unknown, problems: Problems): void {
  if (!isObject(capabilities)) return void problems.push('capabilities must be an object');
  for (const flag of ['createTables', 'createFields', 'views', 'syncToItself']) {
    if (typeof capabilities[flag] !== 'boolean') problems.push(`capabilities.${flag} must be a boolean`);
  }
  if (capabilities['createRelations'] !== undefined && typeof capabilities['createRelations'] !== 'boolean')
    problems.push('capabilities.createRelations must be a boolean when given');
  const modes = capabilities['changeDetection'];
  if (
    !Array.isArray(modes) ||
    modes.length === 0 ||
    !modes.every((mode) => CHANGE_DETECTION.includes(mode as string))
  ) {
    problems.push(`capabilities.changeDetection must be a non-empty array of ${CHANGE_DETECTION.join(', ')}`);
  }
  const live = capabilities['liveExport'];
  if (
    !isObject(live) ||
    typeof live['source'] !== 'boolean' ||
    typeof live['destination'] !== 'boolean' ||
    !LOCATION_KINDS.includes(live['locationKind'] as string | null)
  ) {
    problems.push(
      'capabilities.liveExport must be {source: boolean, destination: boolean, locationKind: ' +
        '"schema" | "database" | null}',
    );
  }
}

/** Every problem of a declaration (empty when it is sound). */
export function declarationProblems(value: unknown): string[] {
  const problems: Problems = [];
  if (!isObject(value)) return ['a connector declaration must be an object'];
  if (typeof value['type'] !== 'string' || !/^[a-z][a-z0-9_]*$/.test(value['type']))
    problems.push('type must be a lower-case slug (a-z, 0-9, _), starting with a letter');
  if (!isText(value['displayName'])) problems.push('displayName must be a non-empty string');
  if (!(PLANS as readonly unknown[]).includes(value['plan']))
    problems.push(`plan must be one of ${PLANS.join(', ')}`);
  checkAuth(value['auth'], problems);
  checkCapabilities(value['capabilities'], problems);
  if (typeof value['connect'] !== 'function')
    problems.push('connect must be a function (credentials, base, context) => Promise<Connection>');
  return problems;
}

export function isDeclaration(value: unknown): value is ConnectorDeclaration {
  return declarationProblems(value).length === 0;
}
