/** Operation rows of reconcile: what was detected on a side or written to it, named after the record. */
import type { SideName, Values } from '@lockstep/domain';
import { fieldEnd, type PairPlan, sideEnd } from '../plan';
import { type LinkRow, type OperationRow, remoteOf } from '@lockstep/persistence';

/** A record's name: its first non-empty text value on `side`, else its remote id there. */
export function recordName(
  pair: PairPlan,
  side: SideName,
  values: Values | null,
  remoteId: string | null,
): string | null {
  if (values) {
    for (const field of pair.fields) {
      const end = fieldEnd(field, side);
      const value = values[end.remoteId];
      if (end.typeClass === 'text' && typeof value === 'string' && value !== '') return value.slice(0, 200);
    }
  }
  return remoteId;
}

/** An operation on one side of a link (its record name from the values that side shows). */
export function operation(
  pair: PairPlan,
  link: LinkRow,
  side: SideName,
  values: Values | null,
  action: string,
  trigger: OperationRow['trigger'],
  changes: OperationRow['field_changes'],
  details: Record<string, unknown> | null,
): OperationRow {
  const table = sideEnd(pair, side);
  const remoteId = remoteOf(link, side);
  return {
    record_id: link.id,
    table_pair: pair.index,
    side,
    table_id: table.id,
    table_name: table.name,
    record_remote_id: remoteId,
    record_name: recordName(pair, side, values, remoteId),
    action,
    trigger,
    field_changes: changes,
    details,
  };
}

/** An operation on one side of a link, named as the link is (a delete has no values to name it from). */
export function linkOperation(
  pair: PairPlan,
  link: LinkRow,
  side: SideName,
  action: string,
  trigger: 'push' | 'poll',
  details: Record<string, unknown> | null,
): OperationRow {
  return { ...operation(pair, link, side, null, action, trigger, [], details), record_name: link.name };
}
