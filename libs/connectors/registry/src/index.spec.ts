import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConnectorError } from '@lockstep/connectors-core';
import {
  CONNECTORS,
  ConnectorPluginError,
  declarationProblems,
  findConnector,
  loadConnectorPlugins,
  registerConnectors,
} from './index';

/** The source of a plugin module declaring one connector (CommonJS, as a self-hoster writes it). */
const pluginSource = (type: string, extra = '') => `
module.exports = function (sdk) {
  return sdk.defineConnector({
    type: ${JSON.stringify(type)},
    displayName: 'Plugin ${type}',
    plan: 'free',
    auth: { method: 'oauth', fields: null, oauth: { authorizationEndpoint: 'https://app.example.com/authorize', tokenEndpoint: 'https://app.example.com/token', scopes: ['read', 'write'] } },
    capabilities: { createTables: false, createFields: false, views: false, changeDetection: ['full_scan'], syncToItself: false, liveExport: { source: false, destination: false, locationKind: null } },
    connect: async () => { throw new sdk.ConnectorError('unsupported', 'no app here'); },
    ${extra}
  });
};`;

const declaration = (type: string, overrides: Record<string, unknown> = {}) => ({
  type,
  displayName: `Direct ${type}`,
  plan: 'pro',
  auth: {
    method: 'api_key',
    fields: [
      {
        id: 'token',
        label: 'Token',
        optional: false,
        placeholder: 'tok_...',
        options: null,
        help: { label: 'Tokens', url: 'https://example.com/tokens' },
      },
    ],
  },
  capabilities: {
    createTables: true,
    createFields: true,
    views: false,
    changeDetection: ['incremental', 'full_scan'],
    syncToItself: true,
    liveExport: { source: true, destination: false, locationKind: null },
  },
  connect: async () => {
    throw new ConnectorError('unsupported', 'test');
  },
  ...overrides,
});

describe('connector registry', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'lockstep-plugins-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, source: string) => {
    writeFileSync(join(dir, name), source);
    return join(dir, name);
  };

  it('finds each connector by its type', () => {
    for (const connector of CONNECTORS) expect(findConnector(connector.type)).toBe(connector);
  });

  it('includes postgres', () => {
    expect(findConnector('postgres')?.displayName).toBe('PostgreSQL');
  });

  it('returns undefined for an unknown type', () => {
    expect(findConnector('no_such_connector')).toBeUndefined();
  });

  it('has unique types and spec 2.6 auth declarations', () => {
    expect(new Set(CONNECTORS.map((connector) => connector.type)).size).toBe(CONNECTORS.length);
    for (const connector of CONNECTORS) {
      expect(declarationProblems(connector)).toEqual([]);
      if (connector.auth.method === 'api_key') {
        for (const field of connector.auth.fields) {
          expect(field).toEqual(
            expect.objectContaining({
              id: expect.any(String),
              label: expect.any(String),
              optional: expect.any(Boolean),
              placeholder: expect.any(String),
            }),
          );
          expect(field.options === null || Array.isArray(field.options)).toBe(true);
          expect(field.help).toEqual({
            label: expect.any(String),
            url: expect.stringMatching(/^https:\/\//),
          });
        }
      } else {
        expect(connector.auth.fields).toBeNull();
      }
    }
  });

  describe('plugins', () => {
    it('loads a plugin function given the SDK, and the connector is then listed and found', async () => {
      const file = write('oauth-app.js', pluginSource('plugin_oauth'));
      const added = loadConnectorPlugins([file]);
      expect(added.map((connector) => connector.type)).toEqual(['plugin_oauth']);
      const found = findConnector('plugin_oauth')!;
      expect(found.displayName).toBe('Plugin plugin_oauth');
      expect(CONNECTORS).toContain(found);
      expect(Object.isFrozen(found)).toBe(true);
      // ConnectorError from the SDK is the registry's own class, so the API translates it like a built-in's.
      await expect(
        found.connect({}, null, { egress: { allowPrivate: true, allowLoopback: true } }),
      ).rejects.toBeInstanceOf(ConnectorError);
    });

    it('loading the same module twice is a no-op (every entry point may load at boot)', () => {
      const file = write('twice.js', pluginSource('plugin_twice'));
      expect(loadConnectorPlugins([file])).toHaveLength(1);
      expect(loadConnectorPlugins([file, ` ${file} `, ''])).toEqual([]);
      expect(CONNECTORS.filter((connector) => connector.type === 'plugin_twice')).toHaveLength(1);
    });

    it('resolves paths relative to the given directory and accepts every export shape', () => {
      write('plain.js', 'module.exports = { connectors: [] };');
      write(
        'array.js',
        `const make = ${pluginSource('x').replace('module.exports = ', '')};
        module.exports = (sdk) => [Object.assign({}, make(sdk), { type: 'plugin_array_a' }), Object.assign({}, make(sdk), { type: 'plugin_array_b' })];`,
      );
      write(
        'esm-default.js',
        `${pluginSource('plugin_default').replace('module.exports = function', 'exports.default = function')}`,
      );
      expect(
        loadConnectorPlugins(['./array.js', './esm-default.js'], dir).map((connector) => connector.type),
      ).toEqual(['plugin_array_a', 'plugin_array_b', 'plugin_default']);
      expect(() => loadConnectorPlugins(['./plain.js'], dir)).toThrow(
        /plain\.js.*exports no connector declaration/,
      );
    });

    it('refuses a type that is already offered, naming the module; nothing of it is added', () => {
      const file = write(
        'dup.js',
        `const make = ${pluginSource('x').replace('module.exports = ', '')};
        module.exports = (sdk) => [Object.assign({}, make(sdk), { type: 'plugin_fresh' }), Object.assign({}, make(sdk), { type: 'postgres' })];`,
      );
      expect(() => loadConnectorPlugins([file])).toThrow(ConnectorPluginError);
      expect(() => loadConnectorPlugins([file])).toThrow(
        /dup\.js.*connector "postgres": the type "postgres" is already offered/,
      );
      expect(findConnector('plugin_fresh')).toBeUndefined();
      expect(() => registerConnectors([declaration('plugin_pair'), declaration('plugin_pair')])).toThrow(
        /"plugin_pair" is already offered/,
      );
      expect(findConnector('plugin_pair')).toBeUndefined();
    });

    it('reports a missing module and a module that throws', () => {
      expect(() => loadConnectorPlugins(['./nowhere.js'], dir)).toThrow(
        /connector plugin "\.\/nowhere\.js": no module found/,
      );
      const file = write('throws.js', `throw new Error('boom at load');`);
      expect(() => loadConnectorPlugins([file])).toThrow(/throws\.js": failed to load: boom at load/);
    });

    it('registers a sound declaration passed directly', () => {
      const [added] = registerConnectors([declaration('plugin_direct')]);
      expect(findConnector('plugin_direct')).toBe(added);
    });
  });

  describe('declaration checks', () => {
    it.each([
      ['a bad type', { type: 'Bad Type' }, /type must be a lower-case slug/],
      ['no display name', { displayName: '' }, /displayName must be a non-empty string/],
      ['an unknown plan', { plan: 'gold' }, /plan must be one of free, pro, business/],
      ['no connect function', { connect: 'nope' }, /connect must be a function/],
      [
        'an unknown auth method',
        { auth: { method: 'password', fields: [] } },
        /auth.method must be "api_key" or "oauth"/,
      ],
      [
        'api_key without fields',
        { auth: { method: 'api_key', fields: [] } },
        /auth.fields must be a non-empty array/,
      ],
      [
        'a field without help',
        {
          auth: {
            method: 'api_key',
            fields: [{ id: 'k', label: 'K', optional: false, placeholder: '', options: null }],
          },
        },
        /auth.fields\[0\].help must be \{label, url\}/,
      ],
      [
        'an oauth endpoint that is not a URL',
        {
          auth: {
            method: 'oauth',
            fields: null,
            oauth: {
              authorizationEndpoint: 'not a url',
              tokenEndpoint: 'https://x.example/token',
              scopes: [],
            },
          },
        },
        /auth.oauth.authorizationEndpoint must be an http\(s\) URL/,
      ],
      [
        'an oauth scope with a space',
        {
          auth: {
            method: 'oauth',
            fields: null,
            oauth: {
              authorizationEndpoint: 'https://x.example/a',
              tokenEndpoint: 'https://x.example/t',
              scopes: ['a b'],
            },
          },
        },
        /auth.oauth.scopes must be an array of scope tokens/,
      ],
      [
        'oauth with fields',
        {
          auth: {
            method: 'oauth',
            fields: [],
            oauth: {
              authorizationEndpoint: 'https://x.example/a',
              tokenEndpoint: 'https://x.example/t',
              scopes: [],
            },
          },
        },
        /auth.fields must be null for oauth auth/,
      ],
      [
        'an unknown change detection',
        { capabilities: { ...declaration('x').capabilities, changeDetection: ['telepathy'] } },
        /capabilities.changeDetection must be/,
      ],
      ['no capabilities', { capabilities: undefined }, /capabilities must be an object/],
    ])('refuses %s', (_label, overrides, message) => {
      const problems = declarationProblems(declaration('plugin_checked', overrides));
      expect(problems.join('\n')).toMatch(message);
      expect(() => registerConnectors([declaration('plugin_checked', overrides)], 'test plugin')).toThrow(
        message,
      );
      expect(findConnector('plugin_checked')).toBeUndefined();
    });

    it('accepts a sound oauth declaration with an issuer', () => {
      expect(
        declarationProblems(
          declaration('plugin_issuer', {
            auth: {
              method: 'oauth',
              fields: null,
              oauth: {
                issuer: 'https://id.example.com',
                authorizationEndpoint: 'https://id.example.com/auth',
                tokenEndpoint: 'https://id.example.com/token',
                scopes: ['openid', 'offline_access'],
              },
            },
          }),
        ),
      ).toEqual([]);
    });
  });
});
