/**
 * The contract suite names fields by the names it created them with (`title`, `amount`), as a database's
 * columns are. An app connector's field ids are its own (Airtable `fld...`, NocoDB `c...`); such a connector
 * accepts exact names wherever it takes an id (as those apps' APIs do), and this wrapper only renames what comes
 * back: field remote ids and record value keys from ids to names. Every call runs the real connector.
 */
import type { ChangeBatch, Connection, FieldInfo, SourceRecord, WriteResult } from '../connector';

export function byNames(connection: Connection): Connection {
  const names = async (table: string): Promise<Map<string, string>> =>
    new Map((await connection.listFields(table)).map((field) => [field.remoteId, field.name]));
  const rename = (map: Map<string, string>, record: SourceRecord): SourceRecord => ({
    ...record,
    values: Object.fromEntries(
      Object.entries(record.values).map(([id, value]) => [map.get(id) ?? id, value]),
    ),
  });
  const renameAll = async (table: string, records: SourceRecord[]) => {
    const map = await names(table);
    return records.map((record) => rename(map, record));
  };
  const renameResults = async (table: string, results: WriteResult[]) => {
    const map = await names(table);
    return results.map((result) =>
      result.ok && result.record ? { ...result, record: rename(map, result.record) } : result,
    );
  };
  const field = (info: FieldInfo): FieldInfo => ({ ...info, remoteId: info.name });
  const wrapped: Connection = {
    type: connection.type,
    checkCredentials: () => connection.checkCredentials(),
    listBases: () => connection.listBases(),
    listTables: () => connection.listTables(),
    listFields: async (table) => (await connection.listFields(table)).map(field),
    readPage: async (table, options) => {
      const page = await connection.readPage(table, options);
      return { ...page, records: await renameAll(table, page.records) };
    },
    countRecords: (table) => connection.countRecords!(table),
    readByIds: async (table, ids) => renameAll(table, await connection.readByIds(table, ids)),
    readByServiceIds: async (table, ids) => renameAll(table, await connection.readByServiceIds(table, ids)),
    currentCheckpoint: (table) => connection.currentCheckpoint(table),
    readChanges: async (table, since, options): Promise<ChangeBatch> => {
      const batch = await connection.readChanges(table, since, options);
      const map = await names(table);
      return {
        ...batch,
        changes: batch.changes.map((change) =>
          change.record ? { ...change, record: rename(map, change.record) } : change,
        ),
      };
    },
    createRecords: async (table, rows) => renameResults(table, await connection.createRecords(table, rows)),
    updateRecords: async (table, rows) => renameResults(table, await connection.updateRecords(table, rows)),
    deleteRecords: (table, ids) => connection.deleteRecords(table, ids),
    createTable: (name, fields) => connection.createTable(name, fields),
    createField: async (table, spec) => field(await connection.createField(table, spec)),
    prepareTable: async (table, options) => {
      const prepared = await connection.prepareTable(table, options);
      const map = await names(table);
      const serviceIdField =
        prepared.serviceIdField && (map.get(prepared.serviceIdField) ?? prepared.serviceIdField);
      return { ...prepared, serviceIdField };
    },
    unprepareTable: (table) => connection.unprepareTable(table),
    close: () => connection.close(),
  };
  return wrapped;
}
