/**
 * Airtable's browser sign-in (https://airtable.com/developers/web/api/oauth-reference): the endpoints on the
 * origin of the `AIRTABLE_OAUTH_URL` setting (default https://airtable.com; a proxy, the tests' simulator) and
 * the scopes the connector needs (https://airtable.com/developers/web/api/scopes). Constants only: the
 * declaration imports this file without loading the connection code.
 */
export const OAUTH_URL_SETTING = 'AIRTABLE_OAUTH_URL';
export const DEFAULT_OAUTH_URL = 'https://airtable.com';
export const AUTHORIZE_PATH = '/oauth2/v1/authorize';
export const TOKEN_PATH = '/oauth2/v1/token';

export const REQUIRED_SCOPES = [
  'data.records:read',
  'data.records:write',
  'schema.bases:read',
  'schema.bases:write',
  'webhook:manage',
] as const;
