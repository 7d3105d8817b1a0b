import { ConnectorError } from '@lockstep/connectors-core';
import { parseConnectionString, secretsOf } from './credentials';

describe('parseConnectionString', () => {
  it('reads user, password, host, port and database', () => {
    expect(parseConnectionString({ connectionString: 'mysql://app:p%40ss@db.example:3307/shop' })).toEqual({
      host: 'db.example',
      port: 3307,
      user: 'app',
      password: 'p@ss',
      database: 'shop',
      ssl: null,
    });
  });

  it.each<[string, ReturnType<typeof parseConnectionString>['ssl']]>([
    ['mariadb://u@h', null],
    ['mysql://u@h?ssl-mode=REQUIRED', { rejectUnauthorized: false, verifyIdentity: false }],
    ['mysql://u@h?sslmode=verify_ca', { rejectUnauthorized: true, verifyIdentity: false }],
    ['mysql://u@h?ssl=true', { rejectUnauthorized: true, verifyIdentity: true }],
    ['mysql://u@[::1]:3306?ssl-mode=disabled', null],
  ])('%s -> ssl %j', (connectionString, ssl) => {
    const parsed = parseConnectionString({ connectionString });
    expect(parsed.ssl).toEqual(ssl);
    expect(parsed.port).toBe(3306);
  });

  it.each([
    ['', 'empty'],
    ['not a url', 'not a URL'],
    ['postgres://u:secret-pw@h/db', 'scheme'],
    ['mysql://:secret-pw@h/db', 'no user name'],
    ['mysql://u:secret-pw@h/db?ssl-mode=sometimes', 'unknown ssl mode'],
  ])('refuses %j with kind auth, without echoing it', (connectionString, reason) => {
    let caught: unknown;
    try {
      parseConnectionString({ connectionString });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConnectorError);
    expect((caught as ConnectorError).kind).toBe('auth');
    expect((caught as ConnectorError).message).toContain(reason);
    expect((caught as ConnectorError).message).not.toContain('secret-pw');
  });

  it('lists the password (raw and decoded) and the whole string as secrets', () => {
    expect(secretsOf({ connectionString: 'mysql://u:p%40ss@h/db' })).toEqual([
      'mysql://u:p%40ss@h/db',
      'p%40ss',
      'p@ss',
    ]);
  });
});
