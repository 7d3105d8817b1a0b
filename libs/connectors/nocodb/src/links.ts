/**
 * Writing link fields: NocoDB keeps links apart from the record's columns, so a record's links are set through
 * the links API (`POST` adds links, `DELETE` removes them) after the record is written: the ids to add and to
 * remove are the difference between what the record links now and what it should link.
 */
import { ConnectorError, type SourceRecord } from '@lockstep/connectors-core';
import type { ReadContext } from './records';
import { keyColumn } from './schema';
import { changeLinks, type NocodbRow } from './sql';
import { linkTarget } from './types';

function keysOf(title: string, ids: string[], numeric: boolean): NocodbRow[] {
  return ids.map((id) => ({ [title]: numeric && /^\d+$/.test(id) ? Number(id) : id }));
}

export async function writeLinks(
  context: ReadContext,
  remoteId: string,
  links: Map<string, string[]>,
  current: SourceRecord | null,
): Promise<void> {
  for (const [columnId, wanted] of links) {
    const column = context.table.columns.find((candidate) => candidate.id === columnId)!;
    const target = linkTarget(column);
    if (!target)
      throw new ConnectorError('unsupported', `Field "${column.title}" links no table NocoDB names`);
    const targetKey = keyColumn(await context.schema.table(target));
    const numeric = targetKey.uidt === 'ID';
    const now = current?.values[columnId];
    const have = new Set(
      Array.isArray(now) ? now.map(String) : now === null || now === undefined ? [] : [String(now)],
    );
    const want = new Set(wanted);
    const add = [...want].filter((id) => !have.has(id));
    const remove = [...have].filter((id) => !want.has(id));
    if (remove.length > 0)
      await changeLinks(
        context.api,
        'DELETE',
        context.table.id,
        columnId,
        remoteId,
        keysOf(targetKey.title, remove, numeric),
      );
    if (add.length > 0)
      await changeLinks(
        context.api,
        'POST',
        context.table.id,
        columnId,
        remoteId,
        keysOf(targetKey.title, add, numeric),
      );
  }
}
