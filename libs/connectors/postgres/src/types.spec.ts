import type { FieldSpec } from '@lockstep/connectors-core';
import { resolveConfig } from './config';
import { parseArrayLiteral } from './sql';
import { nativeTypeFor, timestamptzToCanonical } from './types';

describe('parseArrayLiteral', () => {
  it.each([
    ['{}', []],
    ['{1,2,3}', ['1', '2', '3']],
    ['{a,NULL,"NULL",""}', ['a', null, 'NULL', '']],
    [
      '{"b c","with \\"quote\\"","back\\\\slash","{braces}"}',
      ['b c', 'with "quote"', 'back\\slash', '{braces}'],
    ],
    [
      '{{1,2},{3,4}}',
      [
        ['1', '2'],
        ['3', '4'],
      ],
    ],
    ['[0:1]={7,8}', ['7', '8']],
    ['{"2024-02-29 13:45:30+00"}', ['2024-02-29 13:45:30+00']],
  ])('%s', (text, expected) => {
    expect(parseArrayLiteral(text)).toEqual(expected);
  });

  it.each(['{1,2', '1,2}', '{"open}', '{1}x'])('refuses malformed %s', (text) => {
    expect(() => parseArrayLiteral(text)).toThrow(/malformed array literal/);
  });
});

describe('timestamptzToCanonical', () => {
  it.each([
    ['2024-02-29 13:45:30+00', '2024-02-29T13:45:30Z'],
    ['2024-02-29 13:45:30.123456+00', '2024-02-29T13:45:30.123456Z'],
    ['2024-02-29 15:45:30.5+02', '2024-02-29T13:45:30.5Z'],
    ['2024-03-01 00:15:00-05:30', '2024-03-01T05:45:00Z'],
    ['infinity', 'infinity'],
  ])('%s -> %s', (text, expected) => {
    expect(timestamptzToCanonical(text)).toBe(expected);
  });
});

describe('nativeTypeFor', () => {
  it.each<[Omit<FieldSpec, 'name'>, string]>([
    [{ typeClass: 'text' }, 'text'],
    [{ typeClass: 'integer' }, 'bigint'],
    [{ typeClass: 'decimal', typeDetails: { precision: 12, scale: 2 } }, 'numeric(12,2)'],
    [{ typeClass: 'decimal', typeDetails: { precision: 5 } }, 'numeric(5,0)'],
    [{ typeClass: 'decimal' }, 'numeric'],
    [{ typeClass: 'decimal', typeDetails: { precision: 2, scale: 5 } }, 'numeric'],
    [{ typeClass: 'float' }, 'double precision'],
    [{ typeClass: 'boolean' }, 'boolean'],
    [{ typeClass: 'date' }, 'date'],
    [{ typeClass: 'time' }, 'time'],
    [{ typeClass: 'datetime' }, 'timestamp'],
    [{ typeClass: 'timestamp' }, 'timestamptz'],
    [{ typeClass: 'interval' }, 'interval'],
    [{ typeClass: 'uuid' }, 'uuid'],
    [{ typeClass: 'json' }, 'jsonb'],
    [{ typeClass: 'select', typeDetails: { options: ['a'] } }, 'text'],
    [{ typeClass: 'multi_select' }, 'text[]'],
    [{ typeClass: 'array', typeDetails: { element_class: 'integer' } }, 'bigint[]'],
    [{ typeClass: 'array', typeDetails: { element_class: 'timestamp' } }, 'timestamptz[]'],
    [{ typeClass: 'array', typeDetails: { element_class: 'decimal' } }, 'numeric[]'],
    [{ typeClass: 'array' }, 'text[]'],
    [{ typeClass: 'relation', typeDetails: { target_table: 'x' } }, 'text'],
  ])('%j -> %s', (spec, expected) => {
    expect(nativeTypeFor({ name: 'f', ...spec })).toBe(expected);
  });

  it.each<Omit<FieldSpec, 'name'>>([
    { typeClass: 'unsupported' },
    { typeClass: 'array', typeDetails: { element_class: 'array' } },
  ])('refuses %j with kind unsupported', (spec) => {
    expect(() => nativeTypeFor({ name: 'f', ...spec })).toThrow(
      expect.objectContaining({ kind: 'unsupported' }),
    );
  });
});

describe('resolveConfig', () => {
  const context = { egress: { allowPrivate: true, allowLoopback: true } };

  it('connects to the checked address and keeps the host name for TLS', async () => {
    const config = await resolveConfig(
      { connectionString: 'postgres://bob:s%40cret@localhost:6543/app?sslmode=verify-full' },
      context,
    );
    expect(config.client).toMatchObject({
      port: 6543,
      user: 'bob',
      database: 'app',
      ssl: expect.objectContaining({ servername: 'localhost' }),
    });
    expect(config.client.host).toMatch(/^(127\.0\.0\.1|::1)$/);
    expect(config.secrets).toContain('s@cret');
    const password = config.client.password as () => string;
    expect(password()).toBe('s@cret');
  });

  it('disables TLS unless the string asks for it (never from the environment)', async () => {
    const config = await resolveConfig({ connectionString: 'postgres://bob@127.0.0.1/app' }, context);
    expect(config.client.ssl).toBe(false);
    expect((config.client.password as () => string)()).toBe('');
  });

  it.each([
    ['', 'auth'],
    ['mysql://bob@127.0.0.1/app', 'auth'],
    ['postgres://127.0.0.1/app', 'auth'],
    ['postgres://bob:pw@169.254.169.254/app', 'permission'],
  ])('refuses %j with kind %s', async (connectionString, kind) => {
    await expect(resolveConfig({ connectionString }, context)).rejects.toMatchObject({ kind });
  });
});
