/**
 * What the contract suite is told about NocoDB: the classes created fields end up with, the samples NocoDB
 * keeps as written, and the suite's database checks that do not apply, each with the reason.
 */
import type { ContractHarness } from '@lockstep/connectors-core/testing';

export const NOCODB_CONTRACT_OPTIONS: Pick<
  ContractHarness,
  'createdClass' | 'createUnsupported' | 'createdCases' | 'notApplicable' | 'changeTimeoutMs'
> = {
  createdClass: { float: 'decimal', datetime: 'timestamp', uuid: 'text', relation: 'text' },
  createUnsupported: ['array'],
  createdCases: {
    // NocoDB reads numbers as JSON numbers: integers up to 2^53 are exact (a larger one is refused).
    integer: { samples: [0, 42, -7, 9007199254740991] },
    float: { samples: ['1.50000000', '-0.25000000'] },
    datetime: { samples: ['2024-02-29T13:45:30Z', '1999-12-31T23:59:59Z'] },
    multi_select: { samples: [['red', 'green'], ['blue']] },
  },
  changeTimeoutMs: 20_000,
  notApplicable: {
    'batch writes':
      'the plain table refuses a 101-character title and a duplicate id; NocoDB text has no length limit ' +
      'and no field but its own Id is unique (nocodb.spec.ts covers batches with refused, missing and edited records)',
    'prepareTable with serviceIdColumn adds a service id column to a table with a single-column primary key':
      'NocoDB records are keyed by their own Id, never by a field; records that existed before table setup ' +
      'keep an empty Lockstep ID (they are matched, never created, by Lockstep)',
    'createTable types a boolean field and round-trips its values':
      'a NocoDB checkbox has no empty value: the null the suite writes reads back as false (types.spec.ts)',
    'change capture':
      "the suite expects own writes marked or left out; NocoDB's records and webhooks cannot tell this " +
      "connection's writes from another API client's, so the engine's shadows recognise them " +
      '(change-capture.spec.ts covers the feed)',
  },
};
