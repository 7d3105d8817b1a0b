import { Get, Param, Post, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { DomainError, ErrorCode, type RecordStatusDto } from '@lockstep/contracts';
import { isId } from '@lockstep/domain';
import type { SideName } from '@lockstep/persistence';
import type { AuthContext } from '../common/auth/auth-context';
import { RecordTables } from '../records/record-tables';
import { RecordsService } from '../records/records.service';
import { SchemaService } from '../schema/schema.service';
import { SideConnections } from '../syncs/side-connections';
import { isSideName, type LoadedSync, SyncAccess } from '../syncs/sync-access';
import {
  type ConsoleSession,
  consoleAuth,
  ConsoleController,
  consoleNotFound,
  ConsoleRedirect,
  sendPage,
  Session,
} from './console-session';
import { value } from './format';
import { layout } from './layout';
import { type LiveCopy, recordBody, searchBody, type SearchInput } from './record-pages';

/** Which search field a refused search concerns (the records service names codes, not fields). */
function searchError(error: DomainError): NonNullable<SearchInput['error']> {
  if (error.code === ErrorCode.InvalidTable || error.code === ErrorCode.TableAmbiguous)
    return { field: 'table', message: error.message };
  if (error.code === ErrorCode.MissingQuery || error.code === ErrorCode.InvalidRequest)
    return { field: 'query', message: error.message };
  return { field: null, message: error.message };
}

/**
 * A sync's records: the search page (`GET /v1/sync/records` through the same service: by the id in either app,
 * optionally one table of one side, the `rec_` id or the name) and the record status document as a page, with
 * each copy read live from its app and a refetch (`POST /v1/sync/records/{id}/refetch`).
 */
@ConsoleController('syncs')
export class RecordsConsoleController {
  constructor(
    private readonly access: SyncAccess,
    private readonly records: RecordsService,
    private readonly recordTables: RecordTables,
    private readonly schema: SchemaService,
    private readonly connections: SideConnections,
  ) {}

  @Get(':id/records')
  async search(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Res() response: Response,
    @Query('query') query?: string,
    @Query('table') table?: string,
  ): Promise<void> {
    const auth = consoleAuth(session);
    const loaded = await this.access.load(auth, id);
    const input: SearchInput = {
      sync: loaded.sync,
      pairs: await this.recordTables.pairs(loaded.sync),
      query: typeof query === 'string' ? query : '',
      table: typeof table === 'string' ? table : '',
      hits: null,
      hasMore: false,
      error: null,
    };
    let status = 200;
    if (input.query.trim() !== '') {
      try {
        const found = await this.records.search(auth, {
          sync: id,
          query: input.query,
          table: input.table || undefined,
          limit: 25,
        });
        input.hits = found.data;
        input.hasMore = found.has_more;
      } catch (error) {
        if (!(error instanceof DomainError) || error.code === ErrorCode.NotFound) throw error;
        input.error = searchError(error);
        status = 400;
      }
    }
    const title = `Records · ${loaded.sync.name}`;
    sendPage(response, status, layout({ title, session, nav: 'syncs', body: searchBody(input) }));
  }

  @Get(':id/records/:record')
  async record(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Param('record') recordId: string,
    @Res() response: Response,
    @Query('side') sideParam?: string,
    @Query('notice') notice?: string,
  ): Promise<void> {
    const auth = consoleAuth(session);
    const loaded = await this.access.load(auth, id);
    if (!isId('record', recordId)) throw consoleNotFound();
    const status = await this.records.status(auth, recordId, { sync: id, table: undefined });
    const first: SideName = isSideName(sideParam) ? sideParam : status.left ? 'left' : 'right';
    const [left, right] = await Promise.all([
      this.readCopy(loaded, status, 'left'),
      this.readCopy(loaded, status, 'right'),
    ]);
    const body = recordBody({
      session,
      sync: loaded.sync,
      status,
      first,
      live: { left, right },
    });
    const title = `Record ${status.name ?? status.id}`;
    sendPage(response, 200, layout({ title, session, nav: 'syncs', body, notice }));
  }

  @Post(':id/records/:record/refetch')
  async refetch(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Param('record') recordId: string,
  ): Promise<never> {
    const auth: AuthContext = consoleAuth(session);
    await this.access.load(auth, id);
    if (!isId('record', recordId)) throw consoleNotFound();
    let notice: string;
    try {
      const result = await this.records.refetch(auth, recordId, { sync: id, table: undefined }, undefined);
      notice = `Queued: the ${result.sides.join(' and ')} cop${result.sides.length === 1 ? 'y' : 'ies'} will be read again.`;
    } catch (error) {
      if (!(error instanceof DomainError) || error.code === ErrorCode.NotFound) throw error;
      notice = error.message;
    }
    throw new ConsoleRedirect(`/app/syncs/${id}/records/${recordId}?notice=${encodeURIComponent(notice)}`);
  }

  /** One side's copy read from its app now (its values by field name), or why it could not be read. */
  private async readCopy(loaded: LoadedSync, status: RecordStatusDto, side: SideName): Promise<LiveCopy> {
    const copy = status[side];
    const tableRef = status.table[side];
    const entity = loaded.sides[side];
    if (!copy || copy.is_deleted || !tableRef || !entity?.credentials) return { values: null, error: null };
    try {
      const table = await this.schema.cachedTable(loaded.sync.id, tableRef.id);
      if (!table) return { values: null, error: null };
      const [found] = await this.connections.withStoredSide(entity, (connection) =>
        connection.readByIds(table.remoteId, [copy.remote_id]),
      );
      if (!found) return { values: null, error: 'the app has no row with this id any more' };
      const names = new Map(
        (await this.schema.cachedFields(table.id)).map((field) => [field.remoteId, field.name]),
      );
      const values = Object.entries(found.values).map(([field, v]) => ({
        name: names.get(field) ?? field,
        value: value(v),
      }));
      return { values, error: null };
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      return { values: null, error: error.message };
    }
  }
}
