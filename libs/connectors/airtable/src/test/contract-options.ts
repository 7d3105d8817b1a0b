/**
 * What the contract suite is told about Airtable, shared by the run against the simulator (contract.spec.ts)
 * and the opt-in live run (live.spec.ts): the classes created fields end up with, the samples Airtable keeps
 * as written, and the suite's database checks that do not apply, each with the reason.
 */
import type { ContractHarness } from '@lockstep/connectors-core/testing';

export const AIRTABLE_CONTRACT_OPTIONS: Pick<
  ContractHarness,
  'createdClass' | 'createUnsupported' | 'createdCases' | 'notApplicable'
> = {
  createdClass: {
    float: 'decimal',
    time: 'text',
    datetime: 'timestamp',
    uuid: 'text',
    json: 'text',
    relation: 'text',
  },
  createUnsupported: ['array'],
  createdCases: {
    // Airtable omits an empty text and an empty list: they read back as null.
    text: { samples: ['hello', 'ünïcødé ✓ "quoted" \\ back'] },
    // Airtable's numbers are doubles: integers up to 2^53 are exact.
    integer: { samples: [0, 42, -7, 9007199254740991] },
    float: { samples: ['1.50000000', '-0.25000000'] },
    datetime: { samples: ['2024-02-29T13:45:30Z', '1999-12-31T23:59:59Z'] },
    json: { samples: ['{"a":1,"b":[true,null,"x"]}'] },
    multi_select: { samples: [['red', 'green'], ['blue']] },
  },
  notApplicable: {
    'batch writes':
      'the plain table refuses a 101-character title and a duplicate id; Airtable text has no length limit ' +
      'and no field is unique (connection.spec.ts covers batches with refused, missing and edited records)',
    'prepareTable with serviceIdColumn adds a service id column to a table with a single-column primary key':
      'Airtable records are keyed by their own record ids, never by a field; records that existed before ' +
      'table setup keep an empty Lockstep ID (they are matched, never created, by Lockstep)',
    'createTable types a boolean field and round-trips its values':
      'an Airtable checkbox has no empty value: the null the suite writes reads back as false ' +
      '(types.spec.ts; createField round-trips true and false)',
    'change capture':
      "the suite expects own writes marked or left out; Airtable's webhook payloads cannot tell this " +
      "connection's writes from another API client's, so the engine's shadows recognise them " +
      '(change-capture.spec.ts covers the webhook feed)',
  },
};
