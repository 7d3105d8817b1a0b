import type { CanonicalValue, TypeClass } from '@lockstep/domain';
import { decodeValue } from './decode';
import { encodeValue, toMysqlDateTime, ValueError } from './encode';
import { nativeColumnType, parseServerVersion, type ServerInfo } from './native-types';
import { classifyColumn, parseOptions, type ColumnDescription, type Storage } from './types';

function column(overrides: Partial<ColumnDescription>): ColumnDescription {
  return {
    name: 'c',
    dataType: 'varchar',
    columnType: 'varchar(10)',
    nullable: true,
    hasDefault: false,
    autoIncrement: false,
    generated: false,
    comment: '',
    charMaxLength: null,
    numericPrecision: null,
    numericScale: null,
    primary: false,
    jsonCheck: false,
    references: null,
    inView: false,
    ...overrides,
  };
}

const MARIADB: ServerInfo = parseServerVersion('10.11.19-MariaDB-0+deb12u1');
const MYSQL8: ServerInfo = parseServerVersion('8.0.36');

describe('classifyColumn', () => {
  it.each<[string, Partial<ColumnDescription>, TypeClass, Storage, string]>([
    [
      'varchar',
      { dataType: 'varchar', columnType: 'varchar(40)', charMaxLength: 40 },
      'text',
      'text',
      'varchar(40)',
    ],
    ['longtext', { dataType: 'longtext', columnType: 'longtext' }, 'text', 'text', 'longtext'],
    [
      'MariaDB JSON (longtext + json_valid check)',
      { dataType: 'longtext', columnType: 'longtext', jsonCheck: true },
      'json',
      'json',
      'json',
    ],
    ['MySQL JSON', { dataType: 'json', columnType: 'json' }, 'json', 'json', 'json'],
    [
      'tinyint(1) is boolean',
      { dataType: 'tinyint', columnType: 'tinyint(1)' },
      'boolean',
      'bool_int',
      'tinyint(1)',
    ],
    [
      'tinyint(4) is integer',
      { dataType: 'tinyint', columnType: 'tinyint(4)' },
      'integer',
      'integer',
      'tinyint(4)',
    ],
    [
      'MySQL 8 tinyint without width is integer',
      { dataType: 'tinyint', columnType: 'tinyint' },
      'integer',
      'integer',
      'tinyint',
    ],
    ['bit(1) is boolean', { dataType: 'bit', columnType: 'bit(1)' }, 'boolean', 'bool_bit', 'bit(1)'],
    ['bit(8) is integer', { dataType: 'bit', columnType: 'bit(8)' }, 'integer', 'bit_integer', 'bit(8)'],
    ['year is integer', { dataType: 'year', columnType: 'year(4)' }, 'integer', 'integer', 'year(4)'],
    [
      'decimal',
      { dataType: 'decimal', columnType: 'decimal(12,2)', numericPrecision: 12, numericScale: 2 },
      'decimal',
      'decimal',
      'decimal(12,2)',
    ],
    ['double', { dataType: 'double', columnType: 'double' }, 'float', 'float', 'double'],
    [
      'datetime is wall clock',
      { dataType: 'datetime', columnType: 'datetime(6)' },
      'datetime',
      'datetime',
      'datetime(6)',
    ],
    [
      'timestamp is an instant',
      { dataType: 'timestamp', columnType: 'timestamp' },
      'timestamp',
      'timestamp',
      'timestamp',
    ],
    [
      'datetime marked as UTC instant',
      { dataType: 'datetime', columnType: 'datetime(6)', comment: 'lockstep:timestamp' },
      'timestamp',
      'datetime_utc',
      'datetime(6)',
    ],
    ['time', { dataType: 'time', columnType: 'time' }, 'time', 'time', 'time'],
    ['enum is select', { dataType: 'enum', columnType: "enum('a','b')" }, 'select', 'enum', 'enum'],
    ['set is multi_select', { dataType: 'set', columnType: "set('a','b')" }, 'multi_select', 'set', 'set'],
    ['MariaDB uuid', { dataType: 'uuid', columnType: 'uuid' }, 'uuid', 'uuid', 'uuid'],
    [
      'char(36) marked uuid',
      { dataType: 'char', columnType: 'char(36)', comment: 'lockstep:uuid' },
      'uuid',
      'uuid',
      'char(36)',
    ],
    [
      'varchar marked interval',
      { dataType: 'varchar', columnType: 'varchar(64)', comment: 'lockstep:interval' },
      'interval',
      'interval',
      'varchar(64)',
    ],
    [
      'json marked array',
      { dataType: 'json', columnType: 'json', comment: 'lockstep:array:integer' },
      'array',
      'json_array',
      'json',
    ],
    [
      'json marked multi_select',
      { dataType: 'json', columnType: 'json', comment: 'lockstep:multi_select' },
      'multi_select',
      'json_multi_select',
      'json',
    ],
    ['MariaDB inet6 is text', { dataType: 'inet6', columnType: 'inet6' }, 'text', 'text', 'inet6'],
    ['blob is unsupported', { dataType: 'blob', columnType: 'blob' }, 'unsupported', 'unsupported', 'blob'],
    [
      'varbinary is unsupported',
      { dataType: 'varbinary', columnType: 'varbinary(16)' },
      'unsupported',
      'unsupported',
      'varbinary(16)',
    ],
    [
      'geometry is unsupported',
      { dataType: 'geometry', columnType: 'geometry' },
      'unsupported',
      'unsupported',
      'geometry',
    ],
    [
      'foreign key is relation',
      { dataType: 'int', columnType: 'int(11)', references: 'authors' },
      'relation',
      'integer',
      'int(11)',
    ],
  ])('%s', (_what, overrides, typeClass, storage, type) => {
    const classified = classifyColumn(column(overrides));
    expect({ typeClass: classified.typeClass, storage: classified.storage, type: classified.type }).toEqual({
      typeClass,
      storage,
      type,
    });
    expect(classified.read).toBe(typeClass !== 'unsupported');
  });

  it('reports options, lengths, precision and relation targets in typeDetails', () => {
    expect(classifyColumn(column({ dataType: 'set', columnType: "set('a','b')" })).typeDetails).toEqual({
      options: ['a', 'b'],
      allows_multiple_values: true,
    });
    expect(
      classifyColumn(column({ dataType: 'varchar', columnType: 'varchar(40)', charMaxLength: 40 }))
        .typeDetails,
    ).toEqual({ max_length: 40 });
    expect(
      classifyColumn(column({ dataType: 'decimal', numericPrecision: 10, numericScale: 3 })).typeDetails,
    ).toEqual({ precision: 10, scale: 3 });
    expect(classifyColumn(column({ dataType: 'int', references: 'authors' })).typeDetails).toEqual({
      target_table: 'authors',
      allows_multiple_values: false,
    });
    expect(classifyColumn(column({ dataType: 'text', columnType: 'text' })).typeDetails).toBeNull();
  });

  it.each<[string, Partial<ColumnDescription>, { write: boolean; required: boolean }]>([
    ['NOT NULL without default is required', { nullable: false }, { write: true, required: true }],
    [
      'NOT NULL with a default is not required',
      { nullable: false, hasDefault: true },
      { write: true, required: false },
    ],
    ['nullable is not required', { nullable: true }, { write: true, required: false }],
    [
      'auto_increment is read-only',
      { dataType: 'int', nullable: false, autoIncrement: true },
      { write: false, required: false },
    ],
    [
      'a generated column is read-only',
      { dataType: 'int', generated: true },
      { write: false, required: false },
    ],
    ['a view column is read-only', { nullable: false, inView: true }, { write: false, required: false }],
    [
      'an unsupported column is neither',
      { dataType: 'blob', nullable: false },
      { write: false, required: false },
    ],
  ])('%s', (_what, overrides, expected) => {
    const classified = classifyColumn(column(overrides));
    expect({ write: classified.write, required: classified.required }).toEqual(expected);
  });
});

describe('parseOptions', () => {
  it.each<[string, string[]]>([
    ["enum('a','b')", ['a', 'b']],
    ["enum('it''s','co,mma','')", ["it's", 'co,mma', '']],
    ["set('back\\\\slash','x')", ['back\\slash', 'x']],
    ['enum()', []],
  ])('%s', (columnType, options) => {
    expect(parseOptions(columnType)).toEqual(options);
  });
});

describe('decodeValue (driver value -> canonical)', () => {
  it.each<[Storage, TypeClass, unknown, CanonicalValue]>([
    ['integer', 'integer', 42, 42],
    ['integer', 'integer', '9007199254740991', 9007199254740991],
    ['integer', 'integer', '9007199254740993', '9007199254740993'],
    ['integer', 'integer', '18446744073709551615', '18446744073709551615'],
    ['bit_integer', 'integer', Buffer.from([0x01, 0x00]), 256],
    ['decimal', 'decimal', '12.50', '12.50'],
    ['float', 'float', 3.25, 3.25],
    ['bool_int', 'boolean', 1, true],
    ['bool_int', 'boolean', 0, false],
    ['bool_bit', 'boolean', Buffer.from([1]), true],
    ['bool_bit', 'boolean', Buffer.from([0]), false],
    ['date', 'date', '2024-02-29', '2024-02-29'],
    ['date', 'date', '0000-00-00', null],
    ['time', 'time', '13:45:30.500000', '13:45:30.5'],
    ['time', 'time', '13:45:30.000000', '13:45:30'],
    ['datetime', 'datetime', '2024-02-29 13:45:30.000', '2024-02-29T13:45:30'],
    ['datetime', 'datetime', '2024-02-29 13:45:30.120', '2024-02-29T13:45:30.12'],
    ['timestamp', 'timestamp', '2024-02-29 13:45:30', '2024-02-29T13:45:30Z'],
    ['datetime_utc', 'timestamp', '2024-02-29 13:45:30.000001', '2024-02-29T13:45:30.000001Z'],
    ['uuid', 'uuid', 'AB0C1D2E-0000-4000-8000-000000000000', 'ab0c1d2e-0000-4000-8000-000000000000'],
    ['json', 'json', '{"a":[1,"x",null]}', { a: [1, 'x', null] }],
    ['json', 'json', '"text"', 'text'],
    ['set', 'multi_select', 'a,b', ['a', 'b']],
    ['set', 'multi_select', '', []],
    ['json_multi_select', 'multi_select', '["a","b"]', ['a', 'b']],
    ['json_array', 'array', '[1,2]', [1, 2]],
    ['integer', 'relation', 7, '7'],
    ['text', 'text', null, null],
  ])('%s (%s) %j', (storage, typeClass, raw, expected) => {
    expect(decodeValue({ storage, typeClass }, raw)).toEqual(expected);
  });
});

describe('encodeValue (canonical -> driver parameter)', () => {
  it.each<[Storage, TypeClass, CanonicalValue, unknown]>([
    ['text', 'text', 'hi', 'hi'],
    ['integer', 'integer', 42, 42],
    ['integer', 'integer', '18446744073709551615', 18446744073709551615n],
    ['decimal', 'decimal', '12.50', '12.50'],
    ['decimal', 'decimal', 1.5, '1.5'],
    ['float', 'float', 0.1, 0.1],
    ['bool_int', 'boolean', true, 1],
    ['bool_bit', 'boolean', false, 0],
    ['date', 'date', '2024-02-29', '2024-02-29'],
    ['datetime', 'datetime', '2024-02-29T13:45:30.5', '2024-02-29 13:45:30.5'],
    ['timestamp', 'timestamp', '2024-02-29T13:45:30Z', '2024-02-29 13:45:30'],
    ['timestamp', 'timestamp', '2024-03-01T01:30:00.25+02:00', '2024-02-29 23:30:00.25'],
    ['datetime_utc', 'timestamp', '1999-12-31T23:00:00-01:00', '2000-01-01 00:00:00'],
    ['json', 'json', { a: [1, null] }, '{"a":[1,null]}'],
    ['set', 'multi_select', ['a', 'b'], 'a,b'],
    ['set', 'multi_select', [], ''],
    ['json_multi_select', 'multi_select', ['a'], '["a"]'],
    ['uuid', 'uuid', 'AB0C1D2E-0000-4000-8000-000000000000', 'ab0c1d2e-0000-4000-8000-000000000000'],
    ['integer', 'relation', '7', '7'],
    ['text', 'text', null, null],
  ])('%s (%s) %j', (storage, typeClass, value, expected) => {
    expect(encodeValue({ storage, typeClass, name: 'c' }, value)).toEqual(expected);
  });

  it.each<[Storage, TypeClass, CanonicalValue]>([
    ['integer', 'integer', 'not a number'],
    ['integer', 'integer', 1.5],
    ['decimal', 'decimal', 'abc'],
    ['float', 'float', 'NaN'],
    ['bool_int', 'boolean', 'yes'],
    ['date', 'date', '29/02/2024'],
    ['timestamp', 'timestamp', 'yesterday'],
    ['time', 'time', 'noon'],
    ['set', 'multi_select', ['a,b']],
    ['set', 'multi_select', 'a'],
    ['json_array', 'array', { not: 'an array' }],
    ['uuid', 'uuid', 'not-a-uuid'],
    ['text', 'text', 42],
    ['unsupported', 'unsupported', 'x'],
  ])('refuses %s (%s) %j with a ValueError naming the field', (storage, typeClass, value) => {
    expect(() => encodeValue({ storage, typeClass, name: 'price' }, value)).toThrow(ValueError);
    expect(() => encodeValue({ storage, typeClass, name: 'price' }, value)).toThrow(/^Field "price": /);
  });

  it('converts zoned times to UTC keeping the fraction', () => {
    expect(toMysqlDateTime('2024-01-01T00:30:00.123456+01:00')).toBe('2023-12-31 23:30:00.123456');
    expect(toMysqlDateTime('2024-01-01 10:00')).toBe('2024-01-01 10:00:00');
  });
});

describe('nativeColumnType (created fields)', () => {
  it.each<[TypeClass, Record<string, unknown> | null, ServerInfo, string, string | null]>([
    ['text', null, MARIADB, 'TEXT', null],
    ['text', { max_length: 80 }, MARIADB, 'VARCHAR(80)', null],
    ['text', { max_length: 100000 }, MARIADB, 'TEXT', null],
    ['integer', null, MARIADB, 'BIGINT', null],
    ['decimal', { precision: 12, scale: 2 }, MARIADB, 'DECIMAL(12,2)', null],
    ['decimal', { precision: 10 }, MARIADB, 'DECIMAL(10,0)', null],
    ['decimal', null, MARIADB, 'DECIMAL(38,10)', null],
    ['decimal', { precision: 1000, scale: 500 }, MARIADB, 'DECIMAL(65,30)', null],
    ['float', null, MARIADB, 'DOUBLE', null],
    ['boolean', null, MARIADB, 'TINYINT(1)', null],
    ['date', null, MARIADB, 'DATE', null],
    ['time', null, MARIADB, 'TIME(6)', null],
    ['datetime', null, MARIADB, 'DATETIME(6)', null],
    ['timestamp', null, MARIADB, 'DATETIME(6)', 'lockstep:timestamp'],
    ['interval', null, MARIADB, 'VARCHAR(64)', 'lockstep:interval'],
    ['uuid', null, MARIADB, 'UUID', null],
    ['uuid', null, MYSQL8, 'CHAR(36) CHARACTER SET ascii', 'lockstep:uuid'],
    ['json', null, MYSQL8, 'JSON', null],
    ['select', { options: ['a', "it's"] }, MARIADB, "ENUM('a','it''s')", null],
    ['select', null, MARIADB, 'VARCHAR(255)', null],
    ['multi_select', { options: ['a', 'b'] }, MARIADB, "SET('a','b')", null],
    ['multi_select', { options: ['a,b'] }, MARIADB, 'JSON', 'lockstep:multi_select'],
    ['multi_select', null, MARIADB, 'JSON', 'lockstep:multi_select'],
    ['array', { element_class: 'integer' }, MARIADB, 'JSON', 'lockstep:array:integer'],
    ['relation', { target_table: 'x' }, MARIADB, 'VARCHAR(255)', null],
  ])('%s %j on %j', (typeClass, typeDetails, server, sql, comment) => {
    expect(nativeColumnType({ typeClass, typeDetails }, server)).toEqual({ sql, comment });
  });

  it('cannot create an unsupported field', () => {
    expect(nativeColumnType({ typeClass: 'unsupported' }, MARIADB)).toBeNull();
  });

  it('reads server versions and flavours', () => {
    expect(MARIADB).toEqual({ flavor: 'mariadb', version: [10, 11, 19] });
    expect(parseServerVersion('5.5.5-10.6.12-MariaDB')).toEqual({ flavor: 'mariadb', version: [10, 6, 12] });
    expect(MYSQL8).toEqual({ flavor: 'mysql', version: [8, 0, 36] });
  });
});
