import { randomBytes } from 'node:crypto';
import { runConnectorContractSuite, type FixtureColumn } from '@lockstep/connectors-core/testing';
import { postgresConnector } from './index';
import { createTestDatabase, randomName, type TestDatabase } from './test/pg-test-db';

const SCHEMA = 'contract';
let db: TestDatabase;
const wrongPassword = `wrong-${randomBytes(6).toString('hex')}`;
const missingRole = randomName('ls_nobody');

const FIXTURE_COLUMNS: FixtureColumn[] = [
  {
    name: 'id',
    type: 'integer',
    typeClass: 'integer',
    read: true,
    write: false,
    primary: true,
    required: false,
  },
  {
    name: 'c_text',
    type: 'text',
    typeClass: 'text',
    read: true,
    write: true,
    required: false,
    primary: false,
    samples: ['hello', 'multi\nline ✓ "q" \\', ''],
  },
  {
    name: 'c_varchar',
    type: 'character varying(40)',
    typeClass: 'text',
    read: true,
    write: true,
    typeDetails: { max_length: 40 },
    samples: ['forty characters at most'],
  },
  {
    name: 'c_char',
    type: 'character(3)',
    typeClass: 'text',
    read: true,
    write: true,
    samples: ['abc'],
    normalized: [{ write: 'ab', read: 'ab ' }],
  },
  {
    name: 'c_required',
    type: 'text',
    typeClass: 'text',
    read: true,
    write: true,
    required: true,
    samples: ['must'],
  },
  {
    name: 'c_smallint',
    type: 'smallint',
    typeClass: 'integer',
    read: true,
    write: true,
    samples: [32767, -32768],
  },
  {
    name: 'c_integer',
    type: 'integer',
    typeClass: 'integer',
    read: true,
    write: true,
    samples: [1000000, 0, -2147483648 / 2],
  },
  {
    name: 'c_bigint',
    type: 'bigint',
    typeClass: 'integer',
    read: true,
    write: true,
    samples: [9007199254740991, '9223372036854775807', '-9223372036854775808'],
  },
  {
    name: 'c_numeric',
    type: 'numeric(10,2)',
    typeClass: 'decimal',
    read: true,
    write: true,
    typeDetails: { precision: 10, scale: 2 },
    samples: ['12.50', '-99999999.99'],
    normalized: [{ write: '1.005', read: '1.01' }],
  },
  {
    name: 'c_numeric_free',
    type: 'numeric',
    typeClass: 'decimal',
    read: true,
    write: true,
    samples: ['3.14159265358979323846264338327950288', '100'],
  },
  { name: 'c_real', type: 'real', typeClass: 'float', read: true, write: true, samples: [1.5, 0.1, -3.25] },
  {
    name: 'c_double',
    type: 'double precision',
    typeClass: 'float',
    read: true,
    write: true,
    samples: [0.1, 1e300, -2.5e-300],
  },
  {
    name: 'c_boolean',
    type: 'boolean',
    typeClass: 'boolean',
    read: true,
    write: true,
    samples: [true, false],
  },
  {
    name: 'c_date',
    type: 'date',
    typeClass: 'date',
    read: true,
    write: true,
    samples: ['2024-02-29', '0001-01-01'],
  },
  {
    name: 'c_time',
    type: 'time without time zone',
    typeClass: 'time',
    read: true,
    write: true,
    samples: ['13:45:30', '23:59:59.999999'],
  },
  {
    name: 'c_timetz',
    type: 'time with time zone',
    typeClass: 'text',
    read: true,
    write: true,
    samples: ['13:45:30+02'],
  },
  {
    name: 'c_timestamp',
    type: 'timestamp without time zone',
    typeClass: 'datetime',
    read: true,
    write: true,
    samples: ['2024-02-29T13:45:30', '2024-02-29T13:45:30.123456'],
    normalized: [{ write: '2024-02-29 13:45:30', read: '2024-02-29T13:45:30' }],
  },
  {
    name: 'c_timestamptz',
    type: 'timestamp with time zone',
    typeClass: 'timestamp',
    read: true,
    write: true,
    samples: ['2024-02-29T13:45:30Z', '2024-02-29T13:45:30.5Z'],
    normalized: [{ write: '2024-02-29T15:45:30+02:00', read: '2024-02-29T13:45:30Z' }],
  },
  {
    name: 'c_interval',
    type: 'interval',
    typeClass: 'interval',
    read: true,
    write: true,
    samples: ['P1Y2M3DT4H5M6.5S', 'PT0S', 'PT30M'],
  },
  {
    name: 'c_uuid',
    type: 'uuid',
    typeClass: 'uuid',
    read: true,
    write: true,
    samples: ['0b9f4a52-6f53-4d0a-9c1e-2f1f0a3b4c5d'],
    normalized: [
      { write: '0B9F4A52-6F53-4D0A-9C1E-2F1F0A3B4C5D', read: '0b9f4a52-6f53-4d0a-9c1e-2f1f0a3b4c5d' },
    ],
  },
  {
    name: 'c_json',
    type: 'json',
    typeClass: 'json',
    read: true,
    write: true,
    samples: [{ a: 1, nested: { b: [1, 'x', null] } }, 'just a string', 42, true],
  },
  {
    name: 'c_jsonb',
    type: 'jsonb',
    typeClass: 'json',
    read: true,
    write: true,
    samples: [{ z: 1, a: [true, false] }, [1, 2]],
  },
  {
    name: 'c_enum',
    type: `${SCHEMA}.mood`,
    typeClass: 'select',
    read: true,
    write: true,
    typeDetails: { options: ['happy', 'sad', 'meh'] },
    samples: ['sad'],
  },
  {
    name: 'c_domain',
    type: `${SCHEMA}.email`,
    typeClass: 'text',
    read: true,
    write: true,
    samples: ['a@b.c'],
  },
  {
    name: 'c_inet',
    type: 'inet',
    typeClass: 'text',
    read: true,
    write: true,
    samples: ['192.168.0.1', '::1'],
  },
  {
    name: 'c_text_array',
    type: 'text[]',
    typeClass: 'array',
    read: true,
    write: true,
    typeDetails: { element_class: 'text', allows_multiple_values: true },
    samples: [['a', 'b c', 'with "quote"', 'back\\slash', null, 'NULL', '', '{braces}'], []],
  },
  {
    name: 'c_int_array',
    type: 'integer[]',
    typeClass: 'array',
    read: true,
    write: true,
    typeDetails: { element_class: 'integer' },
    samples: [
      [1, 2, 3],
      [
        [1, 2],
        [3, 4],
      ],
    ],
  },
  {
    name: 'c_enum_array',
    type: `${SCHEMA}.mood[]`,
    typeClass: 'multi_select',
    read: true,
    write: true,
    typeDetails: { options: ['happy', 'sad', 'meh'], allows_multiple_values: true },
    samples: [['happy', 'meh'], []],
  },
  {
    name: 'c_ts_array',
    type: 'timestamp with time zone[]',
    typeClass: 'array',
    read: true,
    write: true,
    typeDetails: { element_class: 'timestamp' },
    samples: [['2024-02-29T13:45:30Z', '2000-01-01T00:00:00.25Z']],
  },
  {
    name: 'c_fk',
    type: 'integer',
    typeClass: 'relation',
    read: true,
    write: true,
    typeDetails: { target_table: 'ls_fixture_target', target_field: 'id' },
    samples: ['1'],
  },
  { name: 'c_generated', type: 'integer', typeClass: 'integer', read: true, write: false, required: false },
  { name: 'c_identity', type: 'bigint', typeClass: 'integer', read: true, write: false, required: false },
  { name: 'c_bytea', type: 'bytea', typeClass: 'unsupported', read: false, write: false },
  { name: 'c_point', type: 'point', typeClass: 'unsupported', read: false, write: false },
  { name: 'c_range', type: 'int4range', typeClass: 'unsupported', read: false, write: false },
  { name: 'c_money', type: 'money', typeClass: 'unsupported', read: false, write: false },
];

runConnectorContractSuite({
  declaration: postgresConnector,
  async setup() {
    db = await createTestDatabase('ls_contract');
    await db.admin.query(`CREATE SCHEMA ${SCHEMA}`);
    return SCHEMA;
  },
  async teardown() {
    await db?.drop();
  },
  goodCredentials: () => ({ connectionString: db.url() }),
  badCredentials: () => ({ connectionString: db.url({ user: missingRole, password: wrongPassword }) }),
  unreachableCredentials: () => ({
    connectionString: db.url({ host: '127.0.0.1', port: 1, password: wrongPassword }),
  }),
  credentialsForHost: (host) => ({ connectionString: db.url({ host, password: wrongPassword }) }),
  secrets: () => [wrongPassword],
  outside: {
    insert: (table, values) => db.outside(SCHEMA).insert(table, values),
    update: (table, where, values) => db.outside(SCHEMA).update(table, where, values),
    delete: (table, where) => db.outside(SCHEMA).delete(table, where),
  },
  fixture: {
    columns: FIXTURE_COLUMNS,
    async create(name) {
      await db.admin.query(`
        CREATE TYPE ${SCHEMA}.mood AS ENUM ('happy', 'sad', 'meh');
        CREATE DOMAIN ${SCHEMA}.email AS text CHECK (VALUE LIKE '%@%');
        CREATE TABLE ${SCHEMA}.ls_fixture_target (id integer PRIMARY KEY);
        INSERT INTO ${SCHEMA}.ls_fixture_target VALUES (1), (2);
        CREATE TABLE ${SCHEMA}.${name} (
          id serial PRIMARY KEY,
          c_text text, c_varchar varchar(40), c_char char(3), c_required text NOT NULL,
          c_smallint smallint, c_integer integer, c_bigint bigint, c_numeric numeric(10,2), c_numeric_free numeric,
          c_real real, c_double double precision, c_boolean boolean,
          c_date date, c_time time, c_timetz timetz, c_timestamp timestamp, c_timestamptz timestamptz, c_interval interval,
          c_uuid uuid, c_json json, c_jsonb jsonb, c_enum ${SCHEMA}.mood, c_domain ${SCHEMA}.email, c_inet inet,
          c_text_array text[], c_int_array integer[], c_enum_array ${SCHEMA}.mood[], c_ts_array timestamptz[],
          c_fk integer REFERENCES ${SCHEMA}.ls_fixture_target (id),
          c_generated integer GENERATED ALWAYS AS (c_integer * 2) STORED,
          c_identity bigint GENERATED BY DEFAULT AS IDENTITY,
          c_bytea bytea, c_point point, c_range int4range, c_money money
        )`);
    },
  },
  async createPlainTable(name, { primaryKey }) {
    await db.admin.query(
      `CREATE TABLE ${SCHEMA}.${name} (${primaryKey ? 'id integer PRIMARY KEY, ' : ''}title varchar(100), amount integer)`,
    );
  },
  createdClass: { select: 'text', multi_select: 'array', relation: 'text' },
});
