import { type EntityManager, type EntityTarget, In, type ObjectLiteral } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { newId } from '@lockstep/domain';
import { type SideName, SyncFieldEntity, SyncSideEntity, SyncTableEntity } from '../../entities';
import { reconcile } from './schema-reconcile';

/** A table as a connector lists it (`TableInfo` of the connector SDK: the fields the cache keeps). */
export interface CachedTableInfo {
  remoteId: string;
  name: string;
  views: { required: boolean; options: { value: string; name: string }[] } | null;
  readOnly: boolean;
}

/** A field as a connector lists it (`FieldInfo` of the connector SDK: the fields the cache keeps). */
export interface CachedFieldInfo {
  remoteId: string;
  name: string;
  type: string;
  typeClass: string;
  read: boolean;
  write: boolean;
  required: boolean;
  primary: boolean;
  typeDetails: Record<string, unknown> | null;
}

const CHUNK = 500;

const ORDER = { position: 'ASC', name: 'ASC', id: 'ASC' } as const;

/**
 * The columns the schema cache writes. Upserts set only these, so columns other code owns (`prepared_at`,
 * set by table setup) keep their value, and default on insert.
 */
type CachedTable = Pick<
  SyncTableEntity,
  | 'id'
  | 'syncId'
  | 'side'
  | 'remoteId'
  | 'name'
  | 'views'
  | 'readOnly'
  | 'orphaned'
  | 'position'
  | 'fieldsFetchedAt'
>;
type CachedField = Pick<
  SyncFieldEntity,
  | 'id'
  | 'tableId'
  | 'remoteId'
  | 'name'
  | 'type'
  | 'typeClass'
  | 'read'
  | 'write'
  | 'required'
  | 'isPrimary'
  | 'typeDetails'
  | 'orphaned'
  | 'position'
>;

/** `type_details` as stored and returned: the connector's object, or null when it has nothing to add. */
const details = (value: Record<string, unknown> | null): Record<string, unknown> | null =>
  value && Object.keys(value).length > 0 ? value : null;

/** Locks the side's row for the transaction: schema writes of one side run one at a time. */
async function lockSide(m: EntityManager, syncId: string, side: SideName): Promise<void> {
  await m
    .getRepository(SyncSideEntity)
    .createQueryBuilder('s')
    .setLock('pessimistic_write')
    .where({ syncId, side })
    .getOne();
}

/**
 * The cached schema of a sync's sides (`sync_tables`, `sync_fields`). Every write runs in one transaction
 * that first locks the parent row (the side for tables, the table for fields), so concurrent loads of the
 * same list are serialised and a remote id never gets two ids.
 */
export class SchemaStore {
  /** `db`: the data source's manager (each write opens its own transaction). */
  constructor(private readonly db: EntityManager) {}

  private get tables() {
    return this.db.getRepository(SyncTableEntity);
  }

  private get fields() {
    return this.db.getRepository(SyncFieldEntity);
  }

  private get sides() {
    return this.db.getRepository(SyncSideEntity);
  }

  /** A side's cached tables in the app's order; orphaned ones only when asked. */
  tablesOf(syncId: string, side: SideName, withOrphaned: boolean): Promise<SyncTableEntity[]> {
    return this.tables.find({
      where: { syncId, side, ...(withOrphaned ? {} : { orphaned: false }) },
      order: ORDER,
    });
  }

  tableById(syncId: string, id: string): Promise<SyncTableEntity | null> {
    return this.tables.findOneBy({ syncId, id });
  }

  /** The cached fields of some tables in the app's order; orphaned ones only when asked. */
  fieldsOf(tableIds: string[], withOrphaned: boolean): Promise<SyncFieldEntity[]> {
    if (tableIds.length === 0) return Promise.resolve([]);
    return this.fields.find({
      where: { tableId: In(tableIds), ...(withOrphaned ? {} : { orphaned: false }) },
      order: ORDER,
    });
  }

  async tablesFetchedAt(syncId: string, side: SideName): Promise<Date | null> {
    return (
      (
        await this.sides.findOne({
          select: { syncId: true, side: true, tablesFetchedAt: true },
          where: { syncId, side },
        })
      )?.tablesFetchedAt ?? null
    );
  }

  /** Tables by id (any sync: the caller checks ownership). */
  tablesByIds(ids: string[]): Promise<SyncTableEntity[]> {
    return this.tables.findBy({ id: In(ids) });
  }

  /** Records that table setup ran on these tables. */
  async markPrepared(ids: string[], at: Date): Promise<void> {
    await this.tables.update({ id: In(ids) }, { preparedAt: at });
  }

  /** Forgets a side's cached tables (a rebuilt side lists another app's or base's). */
  async forgetSide(syncId: string, side: SideName): Promise<void> {
    await this.tables.delete({ syncId, side });
  }

  async fieldsFetchedAt(tableId: string): Promise<Date | null> {
    return (
      (await this.tables.findOne({ select: { id: true, fieldsFetchedAt: true }, where: { id: tableId } }))
        ?.fieldsFetchedAt ?? null
    );
  }

  /**
   * Replaces a side's table list with what the app listed: known remote ids keep their `table_` id, new ones
   * get one, missing ones are marked orphaned (a revived one forgets its fields' fetch time so they are read
   * again). Sets the side's `tables_fetched_at`.
   */
  async saveTables(syncId: string, side: SideName, infos: CachedTableInfo[], fetchedAt: Date): Promise<Date> {
    return this.db.transaction(async (m) => {
      await lockSide(m, syncId, side);
      const { present, missing } = reconcile(await m.findBy(SyncTableEntity, { syncId, side }), infos, () =>
        newId('table'),
      );
      await upsertChunks(
        m,
        SyncTableEntity,
        present.map(({ id, info, position, previous }) =>
          tableRow(id, syncId, side, info, position, previous),
        ),
      );
      await markOrphaned(
        m,
        SyncTableEntity,
        missing.filter((row) => !row.orphaned).map((row) => row.id),
      );
      await m.update(SyncSideEntity, { syncId, side }, { tablesFetchedAt: fetchedAt });
      return fetchedAt;
    });
  }

  /** Adds or updates one table (a table the mappings just created) without touching the rest of the list. */
  async saveTable(syncId: string, side: SideName, info: CachedTableInfo): Promise<SyncTableEntity> {
    return this.db.transaction(async (m) => {
      await lockSide(m, syncId, side);
      const previous = await m.findOneBy(SyncTableEntity, { syncId, side, remoteId: info.remoteId });
      const position =
        previous?.position ??
        ((await m.getRepository(SyncTableEntity).maximum('position', { syncId, side })) ?? -1) + 1;
      const row = tableRow(previous?.id ?? newId('table'), syncId, side, info, position, previous);
      await upsertChunks(m, SyncTableEntity, [row]);
      return m.findOneByOrFail(SyncTableEntity, { id: row.id });
    });
  }

  /**
   * Replaces a table's field list, with the same stable-id and orphan rules; sets its `fields_fetched_at`.
   */
  async saveFields(tableId: string, infos: CachedFieldInfo[], fetchedAt: Date): Promise<Date> {
    return this.db.transaction(async (m) => {
      await m
        .getRepository(SyncTableEntity)
        .createQueryBuilder('t')
        .setLock('pessimistic_write')
        .where({ id: tableId })
        .getOne();
      const { present, missing } = reconcile(await m.findBy(SyncFieldEntity, { tableId }), infos, () =>
        newId('field'),
      );
      await upsertChunks(
        m,
        SyncFieldEntity,
        present.map(({ id, info, position }): CachedField => ({
          id,
          tableId,
          remoteId: info.remoteId,
          name: info.name,
          type: info.type,
          typeClass: info.typeClass,
          read: info.read,
          write: info.write,
          required: info.required,
          isPrimary: info.primary,
          typeDetails: details(info.typeDetails),
          orphaned: false,
          position,
        })),
      );
      await markOrphaned(
        m,
        SyncFieldEntity,
        missing.filter((row) => !row.orphaned).map((row) => row.id),
      );
      await m.update(SyncTableEntity, { id: tableId }, { fieldsFetchedAt: fetchedAt });
      return fetchedAt;
    });
  }
}

function tableRow(
  id: string,
  syncId: string,
  side: SideName,
  info: CachedTableInfo,
  position: number,
  previous: SyncTableEntity | null,
): CachedTable {
  return {
    id,
    syncId,
    side,
    remoteId: info.remoteId,
    name: info.name,
    views: info.views
      ? {
          required: info.views.required,
          options: info.views.options.map((o) => ({ value: o.value, name: o.name })),
        }
      : null,
    readOnly: info.readOnly,
    orphaned: false,
    position,
    // A table that was orphaned may come back changed: its fields are read again on the next request.
    fieldsFetchedAt: previous && !previous.orphaned ? previous.fieldsFetchedAt : null,
  };
}

/**
 * Insert or update rows by id, writing the columns given. (The cast: TypeORM's partial type cannot express
 * jsonb columns of `unknown` values.)
 */
async function upsertChunks<E extends ObjectLiteral>(
  m: EntityManager,
  entity: EntityTarget<E>,
  rows: Partial<E>[],
): Promise<void> {
  for (let i = 0; i < rows.length; i += CHUNK) {
    await m.upsert(entity, rows.slice(i, i + CHUNK) as QueryDeepPartialEntity<E>[], ['id']);
  }
}

async function markOrphaned(
  m: EntityManager,
  entity: EntityTarget<SyncTableEntity | SyncFieldEntity>,
  ids: string[],
): Promise<void> {
  for (let i = 0; i < ids.length; i += CHUNK) {
    await m.update(entity, { id: In(ids.slice(i, i + CHUNK)) }, { orphaned: true });
  }
}
