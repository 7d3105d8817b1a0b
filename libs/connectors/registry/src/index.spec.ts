import { CONNECTORS, findConnector } from './index';

describe('connector registry', () => {
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
      if (connector.auth.method === 'api_key') {
        for (const field of connector.auth.fields) {
          expect(field).toEqual(
            expect.objectContaining({ id: expect.any(String), label: expect.any(String), optional: expect.any(Boolean), placeholder: expect.any(String) }),
          );
          expect(field.options === null || Array.isArray(field.options)).toBe(true);
          expect(field.help).toEqual({ label: expect.any(String), url: expect.stringMatching(/^https:\/\//) });
        }
      } else {
        expect(connector.auth.fields).toBeNull();
      }
    }
  });
});
