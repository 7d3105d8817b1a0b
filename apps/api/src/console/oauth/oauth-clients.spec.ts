import { ConfigError, loadConfig } from '@lockstep/config';
import type { ConnectorDeclaration } from '@lockstep/connectors-core';
import { CONNECTORS } from '@lockstep/connectors-registry';
import { assertOAuthClientsMatch, oauthClientFor } from './oauth-clients';

const BASE_ENV = {
  DATABASE_URL: 'postgres://localhost/x',
  LOCKSTEP_MASTER_KEY: Buffer.alloc(32, 1).toString('base64'),
};
const load = (env: Record<string, string>) => loadConfig({ ...BASE_ENV, ...env });

const oauthConnector = {
  ...CONNECTORS[0]!,
  type: 'crm_cloud',
  auth: {
    method: 'oauth',
    fields: null,
    oauth: {
      authorizationEndpoint: 'https://crm.example/authorize',
      tokenEndpoint: 'https://crm.example/token',
      scopes: ['data'],
    },
  },
} as ConnectorDeclaration;
const offered = [...CONNECTORS, oauthConnector];

describe('OAUTH_CLIENTS and CONNECTOR_PLUGINS settings', () => {
  it('default to no clients and no plugins', () => {
    const config = load({});
    expect(config.OAUTH_CLIENTS).toEqual({});
    expect(config.CONNECTOR_PLUGINS).toEqual([]);
    expect(oauthClientFor(config, 'crm_cloud')).toBeNull();
  });

  it('read a comma-separated plugin list and a JSON client map', () => {
    const config = load({
      CONNECTOR_PLUGINS: ' ./plugins/crm.js, @acme/lockstep-connector ,',
      OAUTH_CLIENTS: JSON.stringify({
        crm_cloud: {
          client_id: 'abc',
          client_secret: 's3cret',
          token_endpoint_auth_method: 'client_secret_post',
        },
      }),
    });
    expect(config.CONNECTOR_PLUGINS).toEqual(['./plugins/crm.js', '@acme/lockstep-connector']);
    expect(oauthClientFor(config, 'crm_cloud')).toEqual({
      client_id: 'abc',
      client_secret: 's3cret',
      token_endpoint_auth_method: 'client_secret_post',
    });
    expect(oauthClientFor(config, 'toString')).toBeNull();
    expect(() => assertOAuthClientsMatch(config, offered)).not.toThrow();
  });

  it.each([
    ['not JSON', '{client_id: abc}', /OAUTH_CLIENTS must be a JSON object/],
    ['an array', '[]', /OAUTH_CLIENTS must be a JSON object/],
    [
      'an entry without client_id',
      '{"crm_cloud": {"client_secret": "x"}}',
      /entry "crm_cloud" needs a non-empty string client_id/,
    ],
    [
      'an unknown auth method',
      '{"crm_cloud": {"client_id": "a", "client_secret": "x", "token_endpoint_auth_method": "private_key_jwt"}}',
      /token_endpoint_auth_method must be/,
    ],
    [
      'a secret method without a secret',
      '{"crm_cloud": {"client_id": "a", "token_endpoint_auth_method": "client_secret_basic"}}',
      /client_secret_basic needs a client_secret/,
    ],
    ['an unknown key', '{"crm_cloud": {"client_id": "a", "secret": "x"}}', /unknown keys: secret/],
  ])('refuse %s at boot', (_label, value, message) => {
    expect(() => load({ OAUTH_CLIENTS: value })).toThrow(ConfigError);
    expect(() => load({ OAUTH_CLIENTS: value })).toThrow(message);
  });

  it('refuse a client for a connector that is not offered or not signed in through the browser', () => {
    const typo = load({ OAUTH_CLIENTS: '{"crm_clod": {"client_id": "a"}}' });
    expect(() => assertOAuthClientsMatch(typo, offered)).toThrow(/no connector "crm_clod" is offered/);
    const apiKey = load({ OAUTH_CLIENTS: '{"postgres": {"client_id": "a"}}' });
    expect(() => assertOAuthClientsMatch(apiKey, offered)).toThrow(
      /connector "postgres" uses api_key credentials/,
    );
  });
});
