import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { In, type Repository } from 'typeorm';
import { DomainError, ErrorCode } from '@lockstep/contracts';
import { isId } from '@lockstep/domain';
import { parseMappings } from '@lockstep/domain';
import { type SideName, type SyncEntity, SyncTableEntity } from '@lockstep/persistence';
import { SIDES } from '../syncs/sync-access';

export interface TableRef {
  id: string;
  name: string;
}

/** The two tables of one table pair of the stored mappings (`record_links.table_pair` is its index). */
export interface PairTables {
  index: number;
  left: TableRef | null;
  right: TableRef | null;
}

/** Where a record may be looked for: a table pair and the side whose remote ids count. */
export interface TableScope {
  pair: number;
  side: SideName;
}

/**
 * The mapped tables of a sync as the records API needs them: the stored mappings document (references are
 * prefixed `table_` ids, parsed with the domain's mappings parser, exactly as the engine's plan reads them)
 * joined with the schema cache for names, and the `table` query parameter resolved to the pairs and sides it
 * selects.
 */
@Injectable()
export class RecordTables {
  constructor(@InjectRepository(SyncTableEntity) private readonly tables: Repository<SyncTableEntity>) {}

  async pairs(sync: SyncEntity): Promise<PairTables[]> {
    const parsed = parseMappings(sync.mappings ?? { tables: [] });
    if (!parsed.ok) return [];
    const refs = parsed.document.tables.map((pair) => ({
      left: typeof pair.leftTable === 'string' ? pair.leftTable : null,
      right: typeof pair.rightTable === 'string' ? pair.rightTable : null,
    }));
    const ids = refs.flatMap((ref) => [ref.left, ref.right]).filter((id): id is string => id !== null);
    const rows = ids.length > 0 ? await this.tables.findBy({ syncId: sync.id, id: In(ids) }) : [];
    const byId = new Map(rows.map((row) => [row.id, { id: row.id, name: row.name }]));
    return refs.map((ref, index) => ({
      index,
      left: ref.left ? (byId.get(ref.left) ?? null) : null,
      right: ref.right ? (byId.get(ref.right) ?? null) : null,
    }));
  }

  /**
   * Every pair and side of the mappings, or only those of the `table` given: a `table_` id or a table's
   * remote id (then exact name) of either side. A table this sync does not have is `invalid_table`; a table
   * of the sync that no pair maps selects nothing.
   */
  async scope(sync: SyncEntity, pairs: PairTables[], table: string | undefined): Promise<TableScope[]> {
    const all = pairs.flatMap((pair) => SIDES.map((side) => ({ pair: pair.index, side })));
    if (table === undefined) return all;
    const invalid = () =>
      new DomainError(
        ErrorCode.InvalidTable,
        `\`table\` "${table.slice(0, 100)}" is not a table of sync ${sync.id}; use a \`table_...\` id ` +
          `or a table's remote id from the sync's table listing.`,
      );
    let matches: SyncTableEntity[];
    if (isId('table', table)) {
      matches = await this.tables.findBy({ syncId: sync.id, id: table });
    } else {
      matches = await this.tables.findBy({ syncId: sync.id, remoteId: table });
      if (matches.length === 0) matches = await this.tables.findBy({ syncId: sync.id, name: table });
    }
    if (matches.length === 0) throw invalid();
    const chosen = new Set(matches.map((row) => `${row.side}:${row.id}`));
    return pairs.flatMap((pair) =>
      SIDES.filter((side) => pair[side] !== null && chosen.has(`${side}:${pair[side]!.id}`)).map((side) => ({
        pair: pair.index,
        side,
      })),
    );
  }
}
