/**
 * The connector contract suite: every connector runs it against a real server.
 *
 * Usage (in `libs/connectors/<type>/src/contract.spec.ts`):
 *
 * ```ts
 * import { runConnectorContractSuite } from '@lockstep/connectors-core/testing';
 * import { myConnector } from './index';
 *
 * runConnectorContractSuite({
 *   declaration: myConnector,
 *   setup: async () => { ...create a throw-away database/schema...; return baseId; },
 *   teardown: async () => { ...drop it, close the admin client... },
 *   goodCredentials: () => ({ ... }),
 *   badCredentials: () => ({ ...wrong password... }),
 *   unreachableCredentials: () => ({ ...a port where nothing listens... }),
 *   credentialsForHost: (host) => ({ ...good credentials with another host... }),
 *   secrets: () => ['the-wrong-password', ...],
 *   outside: { insert, update, delete },          // native client writes, "outside Lockstep"
 *   fixture: { create: (name) => ..., columns: [...one FixtureColumn per native type...] },
 *   createPlainTable: (name, { primaryKey }) => ...,   // id? / title / amount
 *   createdClass: { select: 'text' },             // how created fields come back, when not the same class
 * });
 * ```
 *
 * The suite holds no SQL: everything dialect-specific comes from the harness (see `harness.ts`). Fixture
 * columns that are `required` get their first sample in every round-trip row. It calls
 * Jest's `describe` / `it` itself, so the spec file contains only the call above. Tests inside the suite
 * share one connection and one base and run in order. Table names used: `ls_fixture`, `ls_created`,
 * `ls_fields`, `ls_paging`, `ls_batch`, `ls_serviceid`, `ls_serviceid_pk`, `ls_created_ids`, `ls_changes`,
 * `ls_changes_nopk` (plus whatever the fixture references).
 */
import { afterAll, beforeAll, describe as jestDescribe, expect, it as jestIt } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { format } from 'node:util';
import type { CanonicalValue, TypeClass } from '@lockstep/domain';
import type {
  Change,
  ConnectContext,
  Connection,
  ConnectorErrorKind,
  Credentials,
  FieldInfo,
  RecordCreate,
  SourceRecord,
  TableInfo,
  WriteResult,
} from '../connector';
import { DEFAULT_EGRESS_POLICY } from '../egress';
import type { CanonicalCase, ContractHarness, FixtureColumn } from './harness';
import { pollUntil } from './poll';
import { CANONICAL_CASES } from './samples';

interface CaughtError {
  name: string;
  kind: ConnectorErrorKind;
  message: string;
  stack?: string;
}

/** Awaits `action` and returns the ConnectorError it threw; fails when it succeeds or throws something else. */
export async function catchConnectorError(action: () => Promise<unknown>): Promise<CaughtError> {
  try {
    await action();
  } catch (error) {
    const candidate = error as Partial<CaughtError>;
    if (error instanceof Error && candidate.name === 'ConnectorError' && typeof candidate.kind === 'string') {
      return error as CaughtError;
    }
    throw error;
  }
  throw new Error('expected a ConnectorError, but the call succeeded');
}

/** Reads every page of a table (at most 10,000 pages, so a paging bug cannot loop forever). */
export async function readAllPages(
  connection: Connection,
  table: string,
  pageSize: number,
  fields?: string[],
) {
  const pages: SourceRecord[][] = [];
  let after: string | null = null;
  for (let guard = 0; guard < 10_000; guard += 1) {
    const page = await connection.readPage(table, { after, pageSize, fields });
    pages.push(page.records);
    if (page.next === null) return pages;
    after = page.next;
  }
  throw new Error('readPage never returned next: null');
}

/** Reads changes from `since` until `hasMore` is false; returns them all and the final checkpoint. */
export async function readAllChanges(
  connection: Connection,
  table: string,
  since: string,
  options: { limit?: number; ignoreOwnWrites?: boolean } = {},
): Promise<{ changes: Change[]; checkpoint: string; batches: number }> {
  const changes: Change[] = [];
  let checkpoint = since;
  for (let batches = 1; batches <= 10_000; batches += 1) {
    const batch = await connection.readChanges(table, checkpoint, {
      limit: options.limit ?? 100,
      ignoreOwnWrites: options.ignoreOwnWrites,
    });
    expect(batch.changes.length).toBeLessThanOrEqual(options.limit ?? 100);
    changes.push(...batch.changes);
    checkpoint = batch.checkpoint;
    if (!batch.hasMore) return { changes, checkpoint, batches };
  }
  throw new Error('readChanges never returned hasMore: false');
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function lastChangeFor(changes: Change[], remoteId: string): Change | undefined {
  return changes.filter((change) => change.remoteId === remoteId).pop();
}

function okResult(result: WriteResult | undefined): { remoteId: string; record: SourceRecord | null } {
  if (!result || !result.ok) throw new Error(`expected an ok write result, got ${JSON.stringify(result)}`);
  return result;
}

function byTitle(records: SourceRecord[], title: string): SourceRecord | undefined {
  return records.find((record) => record.values['title'] === title);
}

function caseFor(harness: ContractHarness, typeClass: Exclude<TypeClass, 'unsupported'>): CanonicalCase {
  const base = CANONICAL_CASES[typeClass];
  const override = harness.createdCases?.[typeClass];
  return { spec: { ...base.spec, ...override?.spec }, samples: override?.samples ?? base.samples };
}

function roundTripValues(column: FixtureColumn): { write: CanonicalValue; read: CanonicalValue }[] {
  const values = [
    ...(column.samples ?? []).map((value) => ({ write: value, read: value })),
    ...(column.normalized ?? []),
  ];
  if (column.required !== true && values.length > 0) values.push({ write: null, read: null });
  return values;
}

type Block = (name: string, ...rest: never[]) => void;

/**
 * `describe` / `it` that skip the blocks `notApplicable` names, with the reason in the title (shown by Jest as
 * skipped, never as passed). A `.each` row is named by its title with the row's values in the `%s`
 * placeholders, as Jest names it.
 */
function applicable<T extends typeof jestIt | typeof jestDescribe>(
  block: T,
  notApplicable: Readonly<Record<string, string>>,
): T {
  const run = (name: string, ...rest: never[]) => {
    const reason = notApplicable[name];
    if (reason !== undefined) return (block.skip as Block)(`${name} [not applicable: ${reason}]`, ...rest);
    return (block as unknown as Block)(name, ...rest);
  };
  const each =
    (rows: readonly unknown[]) =>
    (title: string, body: (...args: unknown[]) => unknown, timeout?: number) => {
      const placeholders = (title.match(/%[sdifjoO]/g) ?? []).length;
      for (const row of rows) {
        const args = Array.isArray(row) ? (row as unknown[]) : [row];
        const name = format(title, ...args.slice(0, placeholders));
        run(name, (() => body(...args)) as never, timeout as never);
      }
    };
  return Object.assign(run, { each, skip: block.skip, only: block.only }) as unknown as T;
}

export function runConnectorContractSuite(harness: ContractHarness): void {
  const describe = applicable(jestDescribe, harness.notApplicable ?? {});
  const it = applicable(jestIt, harness.notApplicable ?? {});
  const title = harness.name ?? harness.declaration.type;
  const context: ConnectContext = harness.context ?? { egress: DEFAULT_EGRESS_POLICY };
  const timeoutMs = harness.changeTimeoutMs ?? 10_000;
  const connect = (credentials: Credentials, base: string | null, ctx: ConnectContext = context) =>
    harness.declaration.connect(credentials, base, ctx);
  const connectAndCheck = async (
    credentials: Credentials,
    base: string | null = null,
    ctx: ConnectContext = context,
  ) => {
    const connection = await connect(credentials, base, ctx);
    try {
      await connection.checkCredentials();
    } finally {
      await connection.close();
    }
  };
  const expectNoSecrets = (message: string) => {
    for (const secret of harness.secrets()) {
      if (secret) expect(message).not.toContain(secret);
    }
  };

  describe(`${title} connector contract`, () => {
    let base: string;
    let conn: Connection;

    beforeAll(async () => {
      base = await harness.setup();
      conn = await connect(harness.goodCredentials(), base);
    });

    afterAll(async () => {
      await conn?.close();
      await harness.teardown();
    });

    describe('declaration', () => {
      it('is a valid declaration with spec 2.6 auth fields', () => {
        const declaration = harness.declaration;
        expect(declaration.type).toMatch(/^[a-z][a-z0-9_]*$/);
        expect(declaration.displayName.length).toBeGreaterThan(0);
        expect(declaration.plan.length).toBeGreaterThan(0);
        expect(declaration.capabilities.changeDetection.length).toBeGreaterThan(0);
        if (declaration.auth.method === 'api_key') {
          for (const field of declaration.auth.fields) {
            expect(
              Object.keys(field)
                .filter((key) => key !== 'secret')
                .sort(),
            ).toEqual(['help', 'id', 'label', 'optional', 'options', 'placeholder'].sort());
            expect(Object.keys(field.help).sort()).toEqual(['label', 'url']);
            expect(field.help.url).toMatch(/^https:\/\//);
          }
        } else {
          expect(declaration.auth.fields).toBeNull();
        }
      });
    });

    describe('credentials', () => {
      it('accepts good credentials, with and without a base', async () => {
        await expect(connectAndCheck(harness.goodCredentials())).resolves.toBeUndefined();
        await expect(connectAndCheck(harness.goodCredentials(), base)).resolves.toBeUndefined();
      });

      it('rejects bad credentials with kind auth and the app reason, never echoing a secret', async () => {
        const error = await catchConnectorError(() => connectAndCheck(harness.badCredentials()));
        expect(error.kind).toBe('auth');
        expect(error.message.length).toBeGreaterThan(0);
        expectNoSecrets(error.message);
        expectNoSecrets(String(error.stack));
      });

      it('reports an unreachable server as transient (connection_error), never echoing a secret', async () => {
        if (!harness.unreachableCredentials) {
          expect(harness.unreachableCredentials).toBeUndefined();
          return;
        }
        const unreachable = harness.unreachableCredentials;
        const error = await catchConnectorError(() => connectAndCheck(unreachable()));
        expect(error.kind).toBe('transient');
        expectNoSecrets(error.message);
      });

      it('applies the egress policy before connecting', async () => {
        if (!harness.credentialsForHost) {
          expect(harness.credentialsForHost).toBeUndefined();
          return;
        }
        const forHost = harness.credentialsForHost;
        for (const host of ['169.254.169.254', 'metadata.google.internal', '169.254.10.1']) {
          const error = await catchConnectorError(() => connectAndCheck(forHost(host)));
          expect(error.kind).toBe('permission');
          expectNoSecrets(error.message);
        }
        const noLoopback: ConnectContext = {
          ...context,
          egress: { allowPrivate: false, allowLoopback: false },
        };
        const error = await catchConnectorError(() =>
          connectAndCheck(forHost('127.0.0.1'), null, noLoopback),
        );
        expect(error.kind).toBe('permission');
      });

      it('reports a base that does not exist as not_found', async () => {
        const error = await catchConnectorError(async () => {
          const connection = await connect(harness.goodCredentials(), 'lockstep_no_such_base');
          try {
            await connection.listTables();
          } finally {
            await connection.close();
          }
        });
        expect(error.kind).toBe('not_found');
      });
    });

    describe('bases', () => {
      it('lists the fresh base', async () => {
        const bases = await conn.listBases();
        expect(bases).toContainEqual(expect.objectContaining({ id: base }));
        for (const info of bases) expect(typeof info.name).toBe('string');
      });
    });

    describe('discovery and round trip of every native type', () => {
      const columns = harness.fixture.columns;
      const writable = columns.filter((column) => roundTripValues(column).length > 0);
      let fields: FieldInfo[] = [];
      const written = new Map<string, { expected: CanonicalValue; result: WriteResult }[]>();
      let readBack = new Map<string, SourceRecord>();

      beforeAll(async () => {
        await harness.fixture.create('ls_fixture');
        fields = await conn.listFields('ls_fixture');
        const rows: RecordCreate[] = [];
        const targets: { column: string; expected: CanonicalValue }[] = [];
        // Required columns get their first sample in every row, so each row can be written on its own.
        const required = Object.fromEntries(
          columns
            .filter((column) => column.required && column.write && column.samples?.length)
            .map((column) => [column.name, column.samples![0]!]),
        );
        for (const column of writable) {
          for (const value of roundTripValues(column)) {
            rows.push({ serviceId: randomUUID(), values: { ...required, [column.name]: value.write } });
            targets.push({ column: column.name, expected: value.read });
          }
        }
        const results = rows.length > 0 ? await conn.createRecords('ls_fixture', rows) : [];
        results.forEach((result, index) => {
          const target = targets[index]!;
          const list = written.get(target.column) ?? [];
          list.push({ expected: target.expected, result });
          written.set(target.column, list);
        });
        const ids = results.filter((result) => result.ok).map((result) => okResult(result).remoteId);
        const records = ids.length > 0 ? await conn.readByIds('ls_fixture', ids) : [];
        readBack = new Map(records.map((record) => [record.remoteId, record]));
      });

      it('lists the fixture table', async () => {
        const tables = await conn.listTables();
        const table = tables.find((info) => info.remoteId === 'ls_fixture' || info.name === 'ls_fixture');
        expect(table).toBeDefined();
        expect(table!.readOnly).toBe(false);
        if (!harness.declaration.capabilities.views) expect(table!.views).toBeNull();
      });

      it.each(columns.map((column) => [column.name, column] as const))(
        'discovers column %s',
        (_name, column) => {
          const field = fields.find((info) => info.remoteId === column.name);
          expect(field).toBeDefined();
          if (typeof column.type === 'string') expect(field!.type).toBe(column.type);
          else expect(field!.type).toMatch(column.type);
          expect(field!.typeClass).toBe(column.typeClass);
          expect({ read: field!.read, write: field!.write }).toEqual({
            read: column.read,
            write: column.write,
          });
          if (column.required !== undefined) expect(field!.required).toBe(column.required);
          if (column.primary !== undefined) expect(field!.primary).toBe(column.primary);
          if (column.typeDetails) expect(field!.typeDetails).toMatchObject(column.typeDetails);
          if (column.typeClass === 'unsupported')
            expect({ read: field!.read, write: field!.write }).toEqual({ read: false, write: false });
        },
      );

      it('lists unsupported types with read and write false rather than hiding them', () => {
        for (const field of fields.filter((info) => info.typeClass === 'unsupported')) {
          expect({ read: field.read, write: field.write }).toEqual({ read: false, write: false });
        }
        expect(fields.length).toBe(columns.length);
      });

      it.each(writable.map((column) => [column.name] as const))(
        'round-trips %s (write, then read an equal value)',
        (name) => {
          const entries = written.get(name) ?? [];
          expect(entries.length).toBeGreaterThan(0);
          for (const { expected, result } of entries) {
            if (!result.ok)
              throw new Error(`writing ${name}=${JSON.stringify(expected)} failed: ${result.error.message}`);
            const record = readBack.get(result.remoteId);
            expect(record).toBeDefined();
            expect({ value: record!.values[name] }).toEqual({ value: expected });
            if (result.record)
              expect({ returned: result.record.values[name] }).toEqual({ returned: expected });
          }
        },
      );
    });

    describe('create table and field from each canonical class', () => {
      const unsupported = new Set<TypeClass>(harness.createUnsupported ?? []);
      const classes = (Object.keys(CANONICAL_CASES) as Exclude<TypeClass, 'unsupported'>[]).filter(
        (typeClass) => !unsupported.has(typeClass),
      );
      const expectedClass = (typeClass: TypeClass) => harness.createdClass?.[typeClass] ?? typeClass;
      let table: TableInfo;
      let createdFields: FieldInfo[] = [];
      let created: { typeClass: TypeClass; sample: CanonicalValue; result: WriteResult }[] = [];
      let readBack = new Map<string, SourceRecord>();
      let fieldsTable: FieldInfo[] = [];
      const addedFields = new Map<TypeClass, FieldInfo>();

      beforeAll(async () => {
        table = await conn.createTable(
          'ls_created',
          classes.map((typeClass) => ({ name: `f_${typeClass}`, ...caseFor(harness, typeClass).spec })),
        );
        createdFields = await conn.listFields(table.remoteId);
        const rows: RecordCreate[] = [];
        created = [];
        for (const typeClass of classes) {
          for (const sample of [...caseFor(harness, typeClass).samples, null]) {
            rows.push({ serviceId: randomUUID(), values: { [`f_${typeClass}`]: sample } });
            created.push({
              typeClass,
              sample,
              result: { ok: false, error: { kind: 'transient', message: 'not written', retryable: true } },
            });
          }
        }
        const results = await conn.createRecords(table.remoteId, rows);
        results.forEach((result, index) => (created[index]!.result = result));
        const ids = results.filter((result) => result.ok).map((result) => okResult(result).remoteId);
        readBack = new Map(
          (await conn.readByIds(table.remoteId, ids)).map((record) => [record.remoteId, record]),
        );

        await harness.createPlainTable('ls_fields', { primaryKey: true });
        for (const typeClass of classes) {
          addedFields.set(
            typeClass,
            await conn.createField('ls_fields', {
              name: `x_${typeClass}`,
              ...caseFor(harness, typeClass).spec,
            }),
          );
        }
        fieldsTable = await conn.listFields('ls_fields');
      });

      it('createTable returns a writable table that listTables shows', async () => {
        expect(table.readOnly).toBe(false);
        const tables = await conn.listTables();
        expect(tables.map((info) => info.remoteId)).toContain(table.remoteId);
      });

      it('createTable again with the same name adopts the existing table', async () => {
        const again = await conn.createTable('ls_created', [
          { name: 'f_text', ...caseFor(harness, 'text').spec },
        ]);
        expect(again.remoteId).toBe(table.remoteId);
      });

      it.each([
        ['a NUL character', 'ls_bad\u0000name'],
        ['a name longer than any app allows', 'n'.repeat(100_000)],
      ])('createTable and createField refuse %s as invalid_data', async (_what, name) => {
        const refusal = { kind: 'invalid_data' };
        await expect(conn.createTable(name, [{ name: 'title', typeClass: 'text' }])).rejects.toMatchObject(
          refusal,
        );
        await expect(
          conn.createTable('ls_created_ok_name', [{ name, typeClass: 'text' }]),
        ).rejects.toMatchObject(refusal);
        await expect(conn.createField('ls_fields', { name, typeClass: 'text' })).rejects.toMatchObject(
          refusal,
        );
      });

      it.each(classes.map((typeClass) => [typeClass] as const))(
        'createTable types a %s field and round-trips its values',
        (typeClass) => {
          const field = createdFields.find(
            (info) => info.remoteId === `f_${typeClass}` || info.name === `f_${typeClass}`,
          );
          expect(field).toBeDefined();
          expect(field!.typeClass).toBe(expectedClass(typeClass));
          expect({ read: field!.read, write: field!.write }).toEqual({ read: true, write: true });
          for (const entry of created.filter((item) => item.typeClass === typeClass)) {
            const { remoteId } = okResult(entry.result);
            expect({ value: readBack.get(remoteId)?.values[field!.remoteId] }).toEqual({
              value: entry.sample,
            });
          }
        },
      );

      it.each(classes.map((typeClass) => [typeClass] as const))(
        'createField adds a %s field that round-trips a value',
        async (typeClass) => {
          const field = addedFields.get(typeClass)!;
          expect(field.typeClass).toBe(expectedClass(typeClass));
          expect(fieldsTable.map((info) => info.remoteId)).toContain(field.remoteId);
          const sample = caseFor(harness, typeClass).samples[0]!;
          const id = classes.indexOf(typeClass) + 1;
          const [createdRow] = await conn.createRecords('ls_fields', [
            { serviceId: randomUUID(), values: { id, title: typeClass } },
          ]);
          const { remoteId } = okResult(createdRow);
          const [updated] = await conn.updateRecords('ls_fields', [
            { remoteId, values: { [field.remoteId]: sample } },
          ]);
          okResult(updated);
          const [record] = await conn.readByIds('ls_fields', [remoteId]);
          expect({ value: record?.values[field.remoteId] }).toEqual({ value: sample });
          // A conditional update expecting the value as readByIds returned it is written: the connector compares the
          // value as it reads it, so no value of the class looks edited when it was not.
          const next = caseFor(harness, typeClass).samples[1] ?? sample;
          const expected = { [field.remoteId]: record!.values[field.remoteId] ?? null, title: typeClass };
          okResult(
            (
              await conn.updateRecords('ls_fields', [
                { remoteId, values: { [field.remoteId]: next }, expected },
              ])
            )[0],
          );
          const [after] = await conn.readByIds('ls_fields', [remoteId]);
          expect({ value: after?.values[field.remoteId] }).toEqual({ value: next });
        },
      );

      it('createField again with the same name adopts the existing field', async () => {
        const again = await conn.createField('ls_fields', {
          name: 'x_text',
          ...caseFor(harness, 'text').spec,
        });
        expect(again.remoteId).toBe(addedFields.get('text')!.remoteId);
      });

      it('refuses to create a field of a class it cannot hold with kind unsupported', async () => {
        for (const typeClass of ['unsupported', ...unsupported] as TypeClass[]) {
          const error = await catchConnectorError(() =>
            conn.createField('ls_fields', { name: `u_${typeClass}`, typeClass }),
          );
          expect(error.kind).toBe('unsupported');
        }
      });
    });

    describe('paging', () => {
      const total = 25;
      beforeAll(async () => {
        await harness.createPlainTable('ls_paging', { primaryKey: true });
        const rows = Array.from({ length: total }, (_, index) => ({
          serviceId: randomUUID(),
          values: { id: index + 1, title: `row ${index + 1}`, amount: index + 1 },
        }));
        const results = await conn.createRecords('ls_paging', rows);
        results.forEach((result) => okResult(result));
      });

      it('pages through more rows than one page, each row exactly once', async () => {
        const pages = await readAllPages(conn, 'ls_paging', 7);
        expect(pages.length).toBeGreaterThanOrEqual(4);
        for (const page of pages) expect(page.length).toBeLessThanOrEqual(7);
        const records = pages.flat();
        expect(new Set(records.map((record) => record.remoteId)).size).toBe(total);
        expect(records.map((record) => record.values['title']).sort()).toEqual(
          Array.from({ length: total }, (_, index) => `row ${index + 1}`).sort(),
        );
      });

      it('splits into key ranges that page the table exactly, bounded above (when the connector splits)', async () => {
        if (!conn.splitKeyRanges) return;
        const ranges = await conn.splitKeyRanges('ls_paging', 4);
        expect(ranges).toHaveLength(4);
        expect(ranges[0]!.after).toBeNull();
        expect(ranges.at(-1)!.before).toBeNull();
        const seen: string[][] = [];
        for (const range of ranges) {
          const ids: string[] = [];
          let after = range.after;
          do {
            const page = await conn.readPage('ls_paging', { after, pageSize: 3, before: range.before });
            ids.push(...page.records.map((record) => record.remoteId));
            after = page.next;
          } while (after);
          expect(ids.length).toBeGreaterThanOrEqual(4);
          if (range.before !== null) expect(ids).not.toContain(range.before);
          seen.push(ids);
        }
        const all = seen.flat();
        expect(new Set(all).size).toBe(total);
        expect(all).toHaveLength(total);
        // A bound ends a page early: its last record is the last one before the bound, with no next page.
        const bounded = await conn.readPage('ls_paging', { pageSize: 100, before: ranges[1]!.before });
        expect(bounded.records.map((record) => record.remoteId)).toEqual([...seen[0]!, ...seen[1]!]);
        expect(bounded.next).toBeNull();
        expect(await conn.splitKeyRanges('ls_paging', 100)).toHaveLength(total);
      });

      it('counts what paging streams (when the connector counts)', async () => {
        if (!conn.countRecords) return;
        expect(await conn.countRecords('ls_paging')).toBe(total);
        await harness.createPlainTable('ls_paging_empty', { primaryKey: true });
        expect(await conn.countRecords('ls_paging_empty')).toBe(0);
      });

      it('reads only the requested fields', async () => {
        const page = await conn.readPage('ls_paging', { pageSize: 5, fields: ['title'] });
        expect(page.records).toHaveLength(5);
        expect(page.next).not.toBeNull();
        for (const record of page.records) {
          expect(typeof record.values['title']).toBe('string');
          expect(record.values).not.toHaveProperty('amount');
        }
      });

      it('readByIds leaves out ids that do not exist', async () => {
        const [first] = await conn.readPage('ls_paging', { pageSize: 2 }).then((page) => page.records);
        const [doomed] = await conn.createRecords('ls_paging', [
          { serviceId: randomUUID(), values: { id: 999, title: 'doomed' } },
        ]);
        const doomedId = okResult(doomed).remoteId;
        okResult((await conn.deleteRecords('ls_paging', [doomedId]))[0]);
        const records = await conn.readByIds('ls_paging', [first!.remoteId, doomedId]);
        expect(records.map((record) => record.remoteId)).toEqual([first!.remoteId]);
      });
    });

    describe('batch writes', () => {
      const invalid = harness.invalidPlainValues ?? { amount: 'not a number' };
      let ids: string[] = [];

      beforeAll(async () => {
        await harness.createPlainTable('ls_batch', { primaryKey: true });
      });

      it('creates a batch with one bad row: the others succeed and the bad one is reported', async () => {
        const results = await conn.createRecords('ls_batch', [
          { serviceId: randomUUID(), values: { id: 1, title: 'a', amount: 1 } },
          { serviceId: randomUUID(), values: { id: 2, title: 'b', ...invalid } },
          { serviceId: randomUUID(), values: { id: 3, title: 'c', amount: 3 } },
          { serviceId: randomUUID(), values: { id: 4, title: 'x'.repeat(101) } },
          { serviceId: randomUUID(), values: { id: 5, title: 'e', amount: 5 } },
        ]);
        expect(results.map((result) => result.ok)).toEqual([true, false, true, false, true]);
        for (const bad of [results[1]!, results[3]!]) {
          if (bad.ok) throw new Error('expected a failure');
          expect(bad.error).toMatchObject({ kind: 'invalid_data', retryable: false });
          expect(bad.error.message.length).toBeGreaterThan(0);
        }
        ids = [results[0]!, results[2]!, results[4]!].map((result) => okResult(result).remoteId);
        const stored = (await readAllPages(conn, 'ls_batch', 100)).flat();
        expect(stored.map((record) => record.values['title']).sort()).toEqual(['a', 'c', 'e']);
      });

      it('reports a duplicate key as invalid_data and still writes the rest', async () => {
        const results = await conn.createRecords('ls_batch', [
          { serviceId: randomUUID(), values: { id: 1, title: 'duplicate' } },
          { serviceId: randomUUID(), values: { id: 6, title: 'f' } },
        ]);
        expect(results[0]).toMatchObject({ ok: false, error: { kind: 'invalid_data' } });
        const sixth = okResult(results[1]);
        expect(sixth.record?.values['title'] ?? 'f').toBe('f');
        ids.push(sixth.remoteId);
      });

      it('updates a batch with one bad row and one missing row', async () => {
        const [first, third, , sixth] = ids;
        okResult((await conn.deleteRecords('ls_batch', [sixth!]))[0]);
        const results = await conn.updateRecords('ls_batch', [
          { remoteId: first!, values: { title: 'a2' } },
          { remoteId: third!, values: invalid },
          { remoteId: sixth!, values: { title: 'gone' } },
        ]);
        const updated = okResult(results[0]);
        if (updated.record) expect(updated.record.values['title']).toBe('a2');
        expect(results[1]).toMatchObject({ ok: false, error: { kind: 'invalid_data', retryable: false } });
        expect(results[2]).toMatchObject({ ok: false, error: { kind: 'not_found', retryable: false } });
        const records = await conn.readByIds('ls_batch', [first!, third!]);
        expect(records.map((record) => record.values['title']).sort()).toEqual(['a2', 'c']);
      });

      it('updates conditionally: a record edited since it was read is not written (kind changed), one still as read is', async () => {
        const [first, third, fifth, sixth] = ids;
        const [asRead] = await conn.readByIds('ls_batch', [first!]);
        const results = await conn.updateRecords('ls_batch', [
          {
            remoteId: first!,
            values: { title: 'a3' },
            expected: { title: 'a2', amount: asRead!.values['amount'] ?? null },
          },
          { remoteId: third!, values: { title: 'c2' }, expected: { title: 'read before an edit' } },
          { remoteId: fifth!, values: { title: 'e2' } },
          { remoteId: sixth!, values: { title: 'gone' }, expected: { title: 'f' } },
        ]);
        okResult(results[0]);
        expect(results[1]).toMatchObject({ ok: false, error: { kind: 'changed', retryable: false } });
        if (!results[1]!.ok) expect(results[1]!.error.message).toContain('title');
        okResult(results[2]);
        expect(results[3]).toMatchObject({ ok: false, error: { kind: 'not_found' } });
        const records = await conn.readByIds('ls_batch', [first!, third!, fifth!]);
        expect(
          Object.fromEntries(records.map((record) => [record.remoteId, record.values['title']])),
        ).toEqual({ [first!]: 'a3', [third!]: 'c', [fifth!]: 'e2' });
        // An expected value of another field counts too: an edit of amount since the read refuses a title update.
        const [refused] = await conn.updateRecords('ls_batch', [
          { remoteId: first!, values: { title: 'a4' }, expected: { title: 'a3', amount: 987 } },
        ]);
        expect(refused).toMatchObject({ ok: false, error: { kind: 'changed' } });
        expect((await conn.readByIds('ls_batch', [first!]))[0]!.values['title']).toBe('a3');
      });

      it('deletes a batch; a record already gone counts as deleted', async () => {
        const [first, , fifth, sixth] = ids;
        const results = await conn.deleteRecords('ls_batch', [first!, sixth!, fifth!]);
        expect(results.map((result) => result.ok)).toEqual([true, true, true]);
        expect(await conn.readByIds('ls_batch', [first!, fifth!])).toEqual([]);
      });
    });

    describe('service id and idempotent create', () => {
      let serviceIdField: string | null = null;

      beforeAll(async () => {
        await harness.createPlainTable('ls_serviceid', { primaryKey: false });
        await harness.createPlainTable('ls_serviceid_pk', { primaryKey: true });
        for (const id of [1, 2, 3])
          await harness.outside.insert('ls_serviceid_pk', { id, title: `existing ${id}`, amount: id });
      });

      it('prepareTable adds a service id column to a table without a primary key, idempotently', async () => {
        const prepared = await conn.prepareTable('ls_serviceid', { changeCapture: false });
        expect(typeof prepared.serviceIdField).toBe('string');
        serviceIdField = prepared.serviceIdField;
        const again = await conn.prepareTable('ls_serviceid', { changeCapture: false });
        expect(again.serviceIdField).toBe(serviceIdField);
        const field = (await conn.listFields('ls_serviceid')).find(
          (info) => info.remoteId === serviceIdField,
        );
        expect(field).toMatchObject({ read: true, write: false });
      });

      it('prepareTable with serviceIdColumn adds a service id column to a table with a single-column primary key', async () => {
        const table = 'ls_serviceid_pk';
        const options = { changeCapture: true, serviceIdColumn: true };
        const prepared = await conn.prepareTable(table, options);
        const column = prepared.serviceIdField;
        if (column === null) throw new Error('expected a service id field');
        expect(await conn.prepareTable(table, options)).toEqual(prepared);
        const fields = await conn.listFields(table);
        expect(fields.find((info) => info.remoteId === column)).toMatchObject({
          read: true,
          write: false,
          primary: false,
        });
        expect(fields.find((info) => info.remoteId === 'id')).toMatchObject({ primary: true });

        // Every existing row got its own service id; the remote id is still the primary key.
        const existing = (await readAllPages(conn, table, 2)).flat();
        expect(existing.map((record) => record.remoteId).sort()).toEqual(['1', '2', '3']);
        for (const record of existing) {
          expect(record.serviceId).toMatch(UUID);
          expect(String(record.values['id'])).toBe(record.remoteId);
        }
        expect(new Set(existing.map((record) => record.serviceId)).size).toBe(3);
        const [two] = await conn.readByIds(table, ['2']);
        expect(two).toMatchObject({
          remoteId: '2',
          serviceId: existing.find((record) => record.remoteId === '2')!.serviceId,
        });

        // A create retried with the same service id (after a crash) adopts the row the first one wrote.
        const serviceId = randomUUID();
        const row: RecordCreate = { serviceId, values: { id: 10, title: 'keyed once', amount: 10 } };
        const [first] = await conn.createRecords(table, [row]);
        expect(okResult(first).remoteId).toBe('10');
        const [second, other] = await conn.createRecords(table, [
          row,
          { serviceId: randomUUID(), values: { id: 11, title: 'keyed other' } },
        ]);
        expect(okResult(second).remoteId).toBe('10');
        expect(okResult(other).remoteId).toBe('11');
        const [third] = await conn.createRecords(table, [row]);
        expect(okResult(third).remoteId).toBe('10');
        const stored = (await readAllPages(conn, table, 50)).flat();
        expect(stored.filter((record) => record.values['title'] === 'keyed once')).toEqual([
          expect.objectContaining({ remoteId: '10', serviceId }),
        ]);
        expect(stored).toHaveLength(5);
        expect(await conn.readByServiceIds(table, [serviceId, randomUUID()])).toEqual([
          expect.objectContaining({ remoteId: '10', serviceId }),
        ]);

        // A row the application inserts later gets a service id too.
        await harness.outside.insert(table, { id: 20, title: 'outside', amount: 20 });
        const [outside] = await conn.readByIds(table, ['20']);
        expect(outside?.serviceId).toMatch(UUID);

        // One call mixing everything a create can meet: a row written before (adopted), a new row, the same new
        // row again (shares the first one's result), and a row the table refuses (its key is taken): the refused
        // one fails on its own, and the others are adopted or written once.
        const fresh: RecordCreate = {
          serviceId: randomUUID(),
          values: { id: 30, title: 'mixed new', amount: 30 },
        };
        const mixed = await conn.createRecords(table, [
          row,
          fresh,
          { serviceId: randomUUID(), values: { id: 11, title: 'taken key' } },
          fresh,
        ]);
        expect(okResult(mixed[0]).remoteId).toBe('10');
        expect(okResult(mixed[1]).remoteId).toBe('30');
        expect(mixed[2]).toMatchObject({ ok: false });
        expect(okResult(mixed[3]).remoteId).toBe('30');
        // New rows only, one of them refused: the others are written.
        const [good, refused] = await conn.createRecords(table, [
          { serviceId: randomUUID(), values: { id: 31, title: 'new again', amount: 31 } },
          { serviceId: randomUUID(), values: { id: 30, title: 'taken again' } },
        ]);
        expect(okResult(good).remoteId).toBe('31');
        expect(refused).toMatchObject({ ok: false });
        const after = (await readAllPages(conn, table, 50)).flat();
        expect(after.map((record) => record.remoteId).sort()).toEqual([
          '1',
          '10',
          '11',
          '2',
          '20',
          '3',
          '30',
          '31',
        ]);
        expect(after.filter((record) => record.values['title'] === 'mixed new')).toEqual([
          expect.objectContaining({ remoteId: '30', serviceId: fresh.serviceId }),
        ]);
      });

      it('a repeated create with the same service id adopts the existing row', async () => {
        const serviceId = randomUUID();
        const [first] = await conn.createRecords('ls_serviceid', [
          { serviceId, values: { title: 'once', amount: 1 } },
        ]);
        const [second] = await conn.createRecords('ls_serviceid', [
          { serviceId, values: { title: 'once', amount: 1 } },
        ]);
        expect(okResult(second).remoteId).toBe(okResult(first).remoteId);
        const stored = (await readAllPages(conn, 'ls_serviceid', 50)).flat();
        expect(stored.filter((record) => record.values['title'] === 'once')).toHaveLength(1);
        const found = await conn.readByServiceIds('ls_serviceid', [serviceId, randomUUID()]);
        expect(found).toHaveLength(1);
        expect(found[0]).toMatchObject({ remoteId: okResult(first).remoteId, serviceId });
      });

      it('a created table is idempotent by service id too', async () => {
        const table = await conn.createTable('ls_created_ids', [{ name: 'title', typeClass: 'text' }]);
        const serviceId = randomUUID();
        const [first] = await conn.createRecords(table.remoteId, [{ serviceId, values: { title: 'x' } }]);
        const [second] = await conn.createRecords(table.remoteId, [
          { serviceId, values: { title: 'x' } },
          { serviceId: randomUUID(), values: { title: 'y' } },
        ]);
        expect(okResult(second).remoteId).toBe(okResult(first).remoteId);
        expect((await readAllPages(conn, table.remoteId, 50)).flat()).toHaveLength(2);
        expect(await conn.readByServiceIds(table.remoteId, [serviceId])).toEqual([
          expect.objectContaining({ remoteId: okResult(first).remoteId, serviceId }),
        ]);
      });
    });

    const hasFeed = harness.declaration.capabilities.changeDetection.includes('change_feed');
    (hasFeed ? describe : describe.skip)('change capture', () => {
      let remoteIdOf: (table: string, title: string) => Promise<string>;

      beforeAll(async () => {
        await harness.createPlainTable('ls_changes', { primaryKey: true });
        await harness.createPlainTable('ls_changes_nopk', { primaryKey: false });
        remoteIdOf = async (table, wanted) => {
          const record = byTitle((await readAllPages(conn, table, 200)).flat(), wanted);
          if (!record) throw new Error(`no row titled ${wanted} in ${table}`);
          return record.remoteId;
        };
      });

      it('prepareTable installs change capture', async () => {
        const withKey = await conn.prepareTable('ls_changes', { changeCapture: true });
        expect(withKey).toEqual({ serviceIdField: null, changeCapture: true });
        const withoutKey = await conn.prepareTable('ls_changes_nopk', { changeCapture: true });
        expect(withoutKey.changeCapture).toBe(true);
        expect(typeof withoutKey.serviceIdField).toBe('string');
        expect(await conn.prepareTable('ls_changes', { changeCapture: true })).toEqual(withKey);
      });

      it('sees inserts, updates and deletes made outside Lockstep, and tells its own writes apart', async () => {
        const since = await conn.currentCheckpoint('ls_changes');
        await harness.outside.insert('ls_changes', { id: 1, title: 'one', amount: 1 });
        await harness.outside.insert('ls_changes', { id: 2, title: 'two', amount: 2 });
        const one = await remoteIdOf('ls_changes', 'one');
        const two = await remoteIdOf('ls_changes', 'two');
        await harness.outside.update('ls_changes', { id: 1 }, { title: 'uno' });
        await harness.outside.delete('ls_changes', { id: 2 });
        const [own] = await conn.createRecords('ls_changes', [
          { serviceId: randomUUID(), values: { id: 3, title: 'own', amount: 3 } },
        ]);
        const ownId = okResult(own).remoteId;

        const outsideOnly = await pollUntil(
          () => readAllChanges(conn, 'ls_changes', since, { ignoreOwnWrites: true }),
          ({ changes }) =>
            lastChangeFor(changes, one)?.record?.values['title'] === 'uno' &&
            lastChangeFor(changes, two)?.kind === 'delete',
          { timeoutMs, what: 'outside changes' },
        );
        expect(lastChangeFor(outsideOnly.changes, one)).toMatchObject({
          kind: 'upsert',
          remoteId: one,
          own: false,
        });
        expect(lastChangeFor(outsideOnly.changes, two)).toMatchObject({
          kind: 'delete',
          remoteId: two,
          own: false,
        });
        expect(lastChangeFor(outsideOnly.changes, ownId)).toBeUndefined();
        for (const change of outsideOnly.changes)
          expect(change.at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);

        // The connection is the table's only reader: its own write is not even logged.
        await harness.outside.insert('ls_changes', { id: 4, title: 'after own', amount: 4 });
        const afterOwn = await remoteIdOf('ls_changes', 'after own');
        const everything = await pollUntil(
          () => readAllChanges(conn, 'ls_changes', since, { ignoreOwnWrites: false }),
          ({ changes }) => lastChangeFor(changes, afterOwn) !== undefined,
          { timeoutMs, what: 'the outside write after the own one' },
        );
        expect(lastChangeFor(everything.changes, ownId)).toBeUndefined();
        expect(lastChangeFor(everything.changes, one)).toMatchObject({ kind: 'upsert', own: false });

        const after = await conn.readChanges('ls_changes', everything.checkpoint, { limit: 100 });
        expect(after).toMatchObject({ changes: [], hasMore: false });
      });

      it('logs its own writes for another reader of the table (a second sync), tells them apart, and keeps capture while that reader is left', async () => {
        const other = await connect(harness.goodCredentials(), base, {
          ...context,
          writeOrigin: 'contract-other',
        });
        try {
          await other.prepareTable('ls_changes', { changeCapture: true });
          const since = await conn.currentCheckpoint('ls_changes');
          const otherSince = await other.currentCheckpoint('ls_changes');
          const [own] = await conn.createRecords('ls_changes', [
            { serviceId: randomUUID(), values: { id: 5, title: 'own, shared', amount: 5 } },
          ]);
          const ownId = okResult(own).remoteId;
          // The other reader sees it as a change someone else made; this connection as its own.
          const seenByOther = await pollUntil(
            () => readAllChanges(other, 'ls_changes', otherSince, { ignoreOwnWrites: true }),
            ({ changes }) => lastChangeFor(changes, ownId) !== undefined,
            { timeoutMs, what: "the other reader's view of the write" },
          );
          expect(lastChangeFor(seenByOther.changes, ownId)).toMatchObject({
            kind: 'upsert',
            own: false,
            record: { values: { title: 'own, shared' } },
          });
          const everything = await pollUntil(
            () => readAllChanges(conn, 'ls_changes', since, { ignoreOwnWrites: false }),
            ({ changes }) => lastChangeFor(changes, ownId) !== undefined,
            { timeoutMs, what: 'own change' },
          );
          expect(lastChangeFor(everything.changes, ownId)).toMatchObject({ kind: 'upsert', own: true });
          const { changes: othersOnly } = await readAllChanges(conn, 'ls_changes', since, {
            ignoreOwnWrites: true,
          });
          expect(lastChangeFor(othersOnly, ownId)).toBeUndefined();

          // The other reader leaves: this connection's capture stays.
          await other.unprepareTable('ls_changes');
          const stayed = await conn.currentCheckpoint('ls_changes');
          await harness.outside.insert('ls_changes', { id: 6, title: 'still watched', amount: 6 });
          const watched = await remoteIdOf('ls_changes', 'still watched');
          await pollUntil(
            () => readAllChanges(conn, 'ls_changes', stayed, { ignoreOwnWrites: true }),
            ({ changes }) => lastChangeFor(changes, watched) !== undefined,
            { timeoutMs, what: 'an outside change after the other reader left' },
          );
        } finally {
          await other.close();
        }
      });

      it('sees an outside update of a row Lockstep wrote', async () => {
        const since = await conn.currentCheckpoint('ls_changes');
        await harness.outside.update('ls_changes', { id: 3 }, { title: 'own, edited' });
        const ownId = await remoteIdOf('ls_changes', 'own, edited');
        const { changes } = await pollUntil(
          () => readAllChanges(conn, 'ls_changes', since, { ignoreOwnWrites: true }),
          (result) => lastChangeFor(result.changes, ownId) !== undefined,
          { timeoutMs, what: 'outside edit of an own row' },
        );
        expect(lastChangeFor(changes, ownId)).toMatchObject({
          kind: 'upsert',
          own: false,
          record: { values: { title: 'own, edited' } },
        });
      });

      it('pages through changes with a limit, losing none', async () => {
        const since = await conn.currentCheckpoint('ls_changes');
        for (let id = 10; id < 17; id += 1)
          await harness.outside.insert('ls_changes', { id, title: `bulk ${id}`, amount: id });
        const wanted = await Promise.all(
          Array.from({ length: 7 }, (_, index) => remoteIdOf('ls_changes', `bulk ${index + 10}`)),
        );
        const result = await pollUntil(
          () => readAllChanges(conn, 'ls_changes', since, { limit: 3, ignoreOwnWrites: true }),
          ({ changes }) => wanted.every((remoteId) => lastChangeFor(changes, remoteId) !== undefined),
          { timeoutMs, what: 'seven inserts' },
        );
        expect(result.batches).toBeGreaterThanOrEqual(3);
        expect(new Set(result.changes.map((change) => change.remoteId))).toEqual(new Set(wanted));
      });

      it('reports changes on a table keyed by the service id, deletes with their remote id', async () => {
        const since = await conn.currentCheckpoint('ls_changes_nopk');
        await harness.outside.insert('ls_changes_nopk', { title: 'np1', amount: 1 });
        await harness.outside.insert('ls_changes_nopk', { title: 'np2', amount: 2 });
        const np1 = await remoteIdOf('ls_changes_nopk', 'np1');
        const np2 = await remoteIdOf('ls_changes_nopk', 'np2');
        await harness.outside.update('ls_changes_nopk', { title: 'np1' }, { amount: 10 });
        await harness.outside.delete('ls_changes_nopk', { title: 'np2' });
        const { changes } = await pollUntil(
          () => readAllChanges(conn, 'ls_changes_nopk', since, { ignoreOwnWrites: true }),
          (result) =>
            lastChangeFor(result.changes, np1)?.record?.values['amount'] === 10 &&
            lastChangeFor(result.changes, np2)?.kind === 'delete',
          { timeoutMs, what: 'changes on the service-id table' },
        );
        expect(lastChangeFor(changes, np1)?.record?.serviceId).toEqual(expect.any(String));
        expect(lastChangeFor(changes, np2)).toMatchObject({ kind: 'delete', remoteId: np2 });
      });

      it('wakes a watcher when a change commits (when the connector can be watched)', async () => {
        const watch = conn.watch?.bind(conn);
        if (!watch) {
          expect(conn.watch).toBeUndefined();
          return;
        }
        let wake: (table: string) => void = () => undefined;
        const woken = new Promise<string>((resolve) => (wake = resolve));
        const stop = await watch(['ls_changes'], (table) => wake(table));
        try {
          await harness.outside.insert('ls_changes', { id: 40, title: 'wake up', amount: 40 });
          const timer = new Promise<string>((_, reject) =>
            setTimeout(() => reject(new Error('watch was not woken')), timeoutMs).unref(),
          );
          expect(await Promise.race([woken, timer])).toBe('ls_changes');
        } finally {
          await stop();
        }
      });

      it('unprepareTable removes change capture and keeps the data, idempotently', async () => {
        await conn.unprepareTable('ls_changes');
        await conn.unprepareTable('ls_changes');
        const since = await conn.currentCheckpoint('ls_changes');
        await harness.outside.insert('ls_changes', { id: 50, title: 'unwatched', amount: 50 });
        const unwatched = await remoteIdOf('ls_changes', 'unwatched');
        const { changes } = await readAllChanges(conn, 'ls_changes', since, { ignoreOwnWrites: false });
        expect(lastChangeFor(changes, unwatched)).toBeUndefined();
        expect(await conn.readByIds('ls_changes', [unwatched])).toHaveLength(1);
      });
    });
  });
}
