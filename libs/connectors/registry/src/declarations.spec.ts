/**
 * Importing the connector catalogue loads no database driver: the API lists connectors and checks plans
 * without one, and loads a driver only when it opens a connection. Each driver module here fails when loaded.
 */
jest.mock('pg', () => {
  throw new Error('driver pg loaded');
});
jest.mock('mysql2', () => {
  throw new Error('driver mysql2 loaded');
});
jest.mock('mysql2/promise', () => {
  throw new Error('driver mysql2/promise loaded');
});

import { CONNECTORS, findConnector } from './index';

describe('the connector catalogue without drivers', () => {
  it('lists the built-in declarations, loading no driver', () => {
    expect(CONNECTORS.map((connector) => connector.type)).toEqual(
      expect.arrayContaining(['postgres', 'mysql', 'airtable', 'nocodb']),
    );
    expect(findConnector('nocodb')?.auth).toMatchObject({
      method: 'api_key',
      fields: [
        { id: 'baseUrl', secret: false },
        { id: 'apiToken', secret: true },
      ],
    });
    expect(findConnector('airtable')?.auth).toMatchObject({
      method: 'api_key',
      fields: [{ id: 'apiKey', label: 'Personal access token', secret: true }],
    });
    expect(findConnector('mysql')?.capabilities.liveExport.locationKind).toBe('database');
  });

  it.each([
    ['postgres', 'postgres://user@127.0.0.1:5432/db', /driver pg loaded/],
    ['mysql', 'mysql://user@127.0.0.1:3306/db', /driver mysql2(\/promise)? loaded/],
  ])('loads the %s driver on the first connect', async (type, connectionString, loaded) => {
    const context = { egress: { allowPrivate: true, allowLoopback: true } };
    await expect(findConnector(type)!.connect({ connectionString }, null, context)).rejects.toThrow(loaded);
  });
});
