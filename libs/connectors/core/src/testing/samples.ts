import type { TypeClass } from '@lockstep/domain';
import type { CanonicalCase } from './harness';

/**
 * For each canonical class (except `unsupported`): the field spec `createTable` / `createField` get in the
 * contract suite, and canonical values that must round-trip through the created field. Values follow the
 * table in `libs/domain/src/types/type-class.ts` exactly.
 */
export const CANONICAL_CASES: Readonly<Record<Exclude<TypeClass, 'unsupported'>, CanonicalCase>> =
  Object.freeze({
    text: {
      spec: { typeClass: 'text', sourceType: 'text' },
      samples: ['hello', 'ünïcødé ✓ "quoted" \\ back', ''],
    },
    integer: {
      spec: { typeClass: 'integer', sourceType: 'bigint' },
      samples: [0, 42, -7, 9007199254740991, '9007199254740993'],
    },
    decimal: {
      spec: { typeClass: 'decimal', sourceType: 'numeric(12,2)', typeDetails: { precision: 12, scale: 2 } },
      samples: ['12.50', '-0.01', '1234567890.00'],
    },
    float: {
      spec: { typeClass: 'float', sourceType: 'double precision' },
      samples: [1.5, -0.25, 10000000000, 0.1],
    },
    boolean: { spec: { typeClass: 'boolean', sourceType: 'boolean' }, samples: [true, false] },
    date: { spec: { typeClass: 'date', sourceType: 'date' }, samples: ['2024-02-29', '1999-12-31'] },
    time: { spec: { typeClass: 'time', sourceType: 'time' }, samples: ['13:45:30', '00:00:00'] },
    datetime: {
      spec: { typeClass: 'datetime', sourceType: 'timestamp' },
      samples: ['2024-02-29T13:45:30', '1999-12-31T23:59:59'],
    },
    timestamp: {
      spec: { typeClass: 'timestamp', sourceType: 'timestamptz' },
      samples: ['2024-02-29T13:45:30Z', '2000-01-01T00:00:00Z'],
    },
    interval: { spec: { typeClass: 'interval', sourceType: 'interval' }, samples: ['P1DT2H', 'PT30M'] },
    uuid: {
      spec: { typeClass: 'uuid', sourceType: 'uuid' },
      samples: ['0b9f4a52-6f53-4d0a-9c1e-2f1f0a3b4c5d'],
    },
    json: {
      spec: { typeClass: 'json', sourceType: 'jsonb' },
      samples: [{ a: 1, b: [true, null, 'x'] }, [1, 2, 3]],
    },
    select: {
      spec: { typeClass: 'select', sourceType: 'enum', typeDetails: { options: ['red', 'green', 'blue'] } },
      samples: ['red', 'blue'],
    },
    multi_select: {
      spec: {
        typeClass: 'multi_select',
        sourceType: 'set',
        typeDetails: { options: ['red', 'green', 'blue'], allows_multiple_values: true },
      },
      samples: [['red', 'green'], []],
    },
    array: {
      spec: {
        typeClass: 'array',
        sourceType: 'integer[]',
        typeDetails: { element_class: 'integer', allows_multiple_values: true },
      },
      samples: [[1, 2, 3], []],
    },
    relation: {
      spec: { typeClass: 'relation', sourceType: 'link', typeDetails: { target_table: 'elsewhere' } },
      samples: ['rec-1'],
    },
  });
