import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import type { Connection } from '@lockstep/connectors-core';
import {
  DomainError,
  ErrorCode,
  type FieldListDto,
  type SchemaLoadingDto,
  type TableListDto,
} from '@lockstep/contracts';
import { isId } from '@lockstep/domain';
import { transition } from '@lockstep/domain';
import {
  SchemaStore,
  type SideName,
  type SyncEntity,
  type SyncFieldEntity,
  type SyncSideEntity,
  type SyncTableEntity,
} from '@lockstep/persistence';
import type { AuthContext } from '../common/auth/auth-context';
import { SideConnections } from '../syncs/side-connections';
import { isSideName, type LoadedSync, SIDES, SyncAccess } from '../syncs/sync-access';
import { SyncLinks } from '../syncs/sync-links';
import { BUSY, type Busy, SchemaLocks, type WhenBusy } from './schema-locks';
import { SCHEMA_LOADING, toFieldListDto, toTableListDto } from './schema.mapper';
import { resolveTableRef } from './table-ref';

/** A cached table with its cached fields (null while they were never fetched). */
export type SchemaTable = SyncTableEntity & { fields: SyncFieldEntity[] | null };

export interface SchemaQuery {
  side?: unknown;
  refresh?: unknown;
}

/** `if_missing`: load only when never fetched; `refresh`: read the app again. */
type LoadMode = 'if_missing' | 'refresh';

/**
 * Schema discovery (spec 2.7, 4.3): the tables and fields of each side, read from the app on first use and
 * cached (`sync_tables`, `sync_fields`) until `refresh=true`. One request at a time loads a list; the others
 * get `202 {loading: true}`. Also what the mappings module reads the schema through.
 */
@Injectable()
export class SchemaService {
  private readonly logger = new Logger('SchemaService');

  private readonly store: SchemaStore;

  constructor(
    @InjectDataSource() dataSource: DataSource,
    private readonly access: SyncAccess,
    private readonly connections: SideConnections,
    private readonly links: SyncLinks,
    private readonly locks: SchemaLocks,
  ) {
    this.store = new SchemaStore(dataSource.manager);
  }

  /** `GET /sync/syncs/{sync_id}/tables?side=&refresh=` */
  async listTables(
    auth: AuthContext,
    syncId: string,
    query: SchemaQuery,
  ): Promise<TableListDto | SchemaLoadingDto> {
    const side = parseSide(query.side);
    if (side === undefined)
      throw new DomainError(
        ErrorCode.InvalidSide,
        'The `side` query parameter is required: `left` or `right`.',
      );
    const refresh = parseRefresh(query.refresh);
    const loaded = await this.access.load(auth, syncId);
    const sides = this.access.requireBothConnected(loaded);
    if (refresh) assertRefreshAllowed(loaded.sync);
    const fetchedAt = await this.loadTables(sides[side], refresh ? 'refresh' : 'if_missing', 'busy');
    if (fetchedAt === BUSY) return SCHEMA_LOADING;
    return toTableListDto(side, fetchedAt, await this.store.tablesOf(syncId, side, false), this.links);
  }

  /** `GET /sync/syncs/{sync_id}/tables/{table_id}/fields?side=&refresh=` */
  async listFields(
    auth: AuthContext,
    syncId: string,
    tableRef: string,
    query: SchemaQuery,
  ): Promise<FieldListDto | SchemaLoadingDto> {
    const side = parseSide(query.side);
    const refresh = parseRefresh(query.refresh);
    const loaded = await this.access.load(auth, syncId);
    const sides = this.access.requireBothConnected(loaded);
    if (refresh) assertRefreshAllowed(loaded.sync);
    const table = await this.resolveTable(loaded, sides, tableRef, side);
    if (table === BUSY) return SCHEMA_LOADING;
    const fetchedAt = await this.loadFields(
      sides[table.side],
      table,
      refresh ? 'refresh' : 'if_missing',
      'busy',
    );
    if (fetchedAt === BUSY) return SCHEMA_LOADING;
    return toFieldListDto(table, fetchedAt, await this.store.fieldsOf([table.id], false));
  }

  /**
   * The cached schema of one side for the mappings module, orphaned tables and fields included (they are
   * flagged `orphaned`). Reads the table list from the app when it was never fetched (waiting briefly for a
   * concurrent load); `fields` is null for tables whose fields were never fetched (see `ensureFields`).
   * 409 `auth_required` when a side is not connected.
   */
  async loadSideSchema(loaded: LoadedSync, side: SideName): Promise<{ tables: SchemaTable[] }> {
    await this.loadTables(this.connectedSide(loaded, side), 'if_missing', 'wait');
    const tables = await this.store.tablesOf(loaded.sync.id, side, true);
    const byTable = new Map<string, SyncFieldEntity[]>();
    for (const field of await this.store.fieldsOf(
      tables.filter((t) => t.fieldsFetchedAt !== null).map((t) => t.id),
      true,
    )) {
      byTable.set(field.tableId, [...(byTable.get(field.tableId) ?? []), field]);
    }
    return {
      tables: tables.map((t) => ({
        ...t,
        fields: t.fieldsFetchedAt === null ? null : (byTable.get(t.id) ?? []),
      })),
    };
  }

  /**
   * A table's cached fields (orphaned included), read from the app first when they were never fetched
   * (waiting briefly for a concurrent load). Updates `table.fieldsFetchedAt`.
   */
  async ensureFields(loaded: LoadedSync, table: SyncTableEntity): Promise<SyncFieldEntity[]> {
    await this.loadFields(this.connectedSide(loaded, table.side), table, 'if_missing', 'wait');
    return this.store.fieldsOf([table.id], true);
  }

  /** A cached table of the sync (orphaned included), as stored: nothing is read from the app. */
  cachedTable(syncId: string, tableId: string): Promise<SyncTableEntity | null> {
    return this.store.tableById(syncId, tableId);
  }

  /** A table's cached fields (orphaned included), as stored: nothing is read from the app. */
  cachedFields(tableId: string): Promise<SyncFieldEntity[]> {
    return this.store.fieldsOf([tableId], true);
  }

  /**
   * After the mappings PUT created a table or a field on `side`: reads that table and its fields from the
   * app again, inserting the table row when it is new (the rest of the table list is left as it is).
   * 400 `create_failed` when the app does not list the table.
   */
  async refreshTableAfterCreate(
    loaded: LoadedSync,
    side: SideName,
    tableRemoteId: string,
  ): Promise<SyncTableEntity & { fields: SyncFieldEntity[] }> {
    const sideEntity = this.connectedSide(loaded, side);
    const { info, fields } = await this.live(sideEntity, async (connection) => {
      const found = (await connection.listTables()).find((t) => t.remoteId === tableRemoteId);
      return { info: found, fields: found ? await connection.listFields(tableRemoteId) : [] };
    });
    if (!info)
      throw new DomainError(
        ErrorCode.CreateFailed,
        `The ${side} app does not list the table "${tableRemoteId}" after it was created.`,
        { side, table: tableRemoteId },
      );
    const table = await this.store.saveTable(loaded.sync.id, side, info);
    table.fieldsFetchedAt = await this.store.saveFields(table.id, fields, new Date());
    return { ...table, fields: await this.store.fieldsOf([table.id], true) };
  }

  private connectedSide(loaded: LoadedSync, side: SideName): SyncSideEntity {
    return this.access.requireBothConnected(loaded)[side];
  }

  /**
   * Table reference of the fields endpoint: a prefixed id resolves on its own side (404 when `side` says
   * otherwise); a bare string is a remote id, else an exact name unique among the searched sides' listed
   * tables (one side with `side`, both without). The table lists searched are fetched first when never
   * fetched.
   */
  private async resolveTable(
    loaded: LoadedSync,
    sides: Record<SideName, SyncSideEntity>,
    ref: string,
    side: SideName | undefined,
  ): Promise<SyncTableEntity | Busy> {
    const notFound = () =>
      new DomainError(
        ErrorCode.NotFound,
        `No table "${ref}" ${side ? `on the ${side} side` : 'on either side'} of sync ${loaded.sync.id}.`,
      );
    if (isId('table', ref)) {
      const table = await this.store.tableById(loaded.sync.id, ref);
      if (!table || table.orphaned || (side !== undefined && table.side !== side)) throw notFound();
      return table;
    }
    const searched = side ? [side] : SIDES;
    const candidates: SyncTableEntity[] = [];
    for (const name of searched) {
      if ((await this.loadTables(sides[name], 'if_missing', 'busy')) === BUSY) return BUSY;
      candidates.push(...(await this.store.tablesOf(loaded.sync.id, name, false)));
    }
    const match = resolveTableRef(ref, candidates);
    if (match.kind === 'found') return match.table;
    if (match.kind === 'none') throw notFound();
    const where =
      new Set(match.tables.map((t) => t.side)).size > 1
        ? 'on both sides'
        : `on the ${match.tables[0].side} side`;
    throw new DomainError(
      ErrorCode.TableAmbiguous,
      `"${ref}" matches ${match.by === 'remote_id' ? 'the remote id' : 'the name'} of several tables ` +
        `${where}; use the prefixed table id${side ? '' : ' or pass `side`'}.`,
      { tables: match.tables.map((t) => ({ id: t.id, side: t.side, remote_id: t.remoteId, name: t.name })) },
    );
  }

  /** Loads a side's table list from the app when needed; its fetch time, or BUSY. */
  private async loadTables(side: SyncSideEntity, mode: LoadMode, whenBusy: WhenBusy): Promise<Date | Busy> {
    if (mode === 'if_missing' && side.tablesFetchedAt) return side.tablesFetchedAt;
    const fetchedAt = await this.locks.run(
      this.locks.tablesKey(side.syncId, side.side),
      whenBusy,
      async () => {
        const cached =
          mode === 'if_missing' ? await this.store.tablesFetchedAt(side.syncId, side.side) : null;
        if (cached) return cached; // another request loaded it meanwhile
        const infos = await this.live(side, (connection) => connection.listTables());
        return this.store.saveTables(side.syncId, side.side, infos, new Date());
      },
    );
    if (fetchedAt !== BUSY) side.tablesFetchedAt = fetchedAt;
    return fetchedAt;
  }

  /** Loads a table's fields from the app when needed; their fetch time, or BUSY. */
  private async loadFields(
    side: SyncSideEntity,
    table: SyncTableEntity,
    mode: LoadMode,
    whenBusy: WhenBusy,
  ): Promise<Date | Busy> {
    if (mode === 'if_missing' && table.fieldsFetchedAt) return table.fieldsFetchedAt;
    const fetchedAt = await this.locks.run(this.locks.fieldsKey(table.id), whenBusy, async () => {
      const cached = mode === 'if_missing' ? await this.store.fieldsFetchedAt(table.id) : null;
      if (cached) return cached;
      const infos = await this.live(side, (connection) => connection.listFields(table.remoteId));
      return this.store.saveFields(table.id, infos, new Date());
    });
    if (fetchedAt !== BUSY) table.fieldsFetchedAt = fetchedAt;
    return fetchedAt;
  }

  /** Work on the app with the side's stored credentials; a rejected credential marks the side broken. */
  private async live<T>(side: SyncSideEntity, work: (connection: Connection) => Promise<T>): Promise<T> {
    return this.connections.withStoredSide(side, work);
  }
}

/** `side` query parameter: undefined when absent; 400 `invalid_side` for anything but `left`/`right`. */
function parseSide(value: unknown): SideName | undefined {
  if (value === undefined) return undefined;
  if (isSideName(value)) return value;
  throw new DomainError(
    ErrorCode.InvalidSide,
    `\`side\` must be \`left\` or \`right\`, not ${JSON.stringify(value)}.`,
  );
}

/** `refresh` query parameter: `true` or `false` (default false); anything else is 400 `invalid_request`. */
function parseRefresh(value: unknown): boolean {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  throw new DomainError(
    ErrorCode.InvalidRequest,
    `\`refresh\` must be \`true\` or \`false\`, not ${JSON.stringify(value)}.`,
    {
      errors: [{ path: 'refresh', message: 'refresh must be `true` or `false`' }],
    },
  );
}

/** Spec 3.1: `refresh=true` needs the sync off (409 `sync_active` while it is active). */
function assertRefreshAllowed(sync: SyncEntity): void {
  const outcome = transition(
    { status: sync.status, initialSync: sync.initialSyncPhase, bothSidesConnected: true },
    'refresh_schema',
  );
  if (!outcome.ok)
    throw new DomainError(
      outcome.code === 'sync_active' ? ErrorCode.SyncActive : ErrorCode.Conflict,
      outcome.message,
    );
}
