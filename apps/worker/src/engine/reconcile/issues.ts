/** The record issues reconcile raises: a value that cannot be converted, a write the app refused. */
import type { SideName } from '@lockstep/domain';
import type { WriteResult } from '@lockstep/connectors-core';
import type { EngineContext } from '../context';
import { fieldEnd, type FieldPlan, type PairPlan, sideEnd } from '../plan';
import { type RecordIssue, remoteOf } from '@lockstep/persistence';
import { other, type Unit } from './types';

function recordUrl(ctx: EngineContext, recordId: string): string {
  return `${ctx.publicUrl}/v1/sync/records/${recordId}?sync=${ctx.syncId}`;
}

export function conversionIssue(
  ctx: EngineContext,
  pair: PairPlan,
  unit: Unit,
  field: FieldPlan,
  to: SideName,
  reason: string,
): RecordIssue {
  const from = other(to);
  return {
    recordId: unit.link.id,
    side: to,
    connector: ctx.sides[to].connector,
    cause: `convert:${field.key}`,
    message:
      `The value of ${fieldEnd(field, from).name} cannot be written to ` +
      `${sideEnd(pair, to).name}.${fieldEnd(field, to).name}: ${reason}`,
    remediation: {
      explanation:
        `Lockstep converts ${fieldEnd(field, from).typeClass} values of the ${from} field ` +
        `"${fieldEnd(field, from).name}" into the ${to} field "${fieldEnd(field, to).name}" ` +
        `(${fieldEnd(field, to).typeClass}); this value does not fit: ${reason}.`,
      suggested_action:
        `Change the value in the ${from} record, or widen the ${to} field's type; the record syncs ` +
        `again when it changes (or retry this issue).`,
      links: [{ name: 'Record status', url: recordUrl(ctx, unit.link.id) }],
    },
    tableId: sideEnd(pair, to).id,
    tableName: sideEnd(pair, to).name,
    remoteId: remoteOf(unit.link, from),
    name: unit.link.name,
    recordUrl: recordUrl(ctx, unit.link.id),
  };
}

/** The app refused a create or an update of one record (`create`: which one). */
export function rejectedWriteIssue(
  ctx: EngineContext,
  pair: PairPlan,
  unit: Unit,
  target: SideName,
  create: boolean,
  outcome: Extract<WriteResult, { ok: false }>,
): RecordIssue {
  const from = other(target);
  const error = outcome.error;
  return {
    recordId: unit.link.id,
    side: target,
    connector: ctx.sides[target].connector,
    cause: `write:${error.appCode ?? error.kind}`,
    message:
      `${create ? 'Creating' : 'Updating'} the record in ${sideEnd(pair, target).name} (${target}) was ` +
      `rejected: ${error.message}`,
    remediation: {
      explanation:
        `The ${target} app refused the ${create ? 'new record' : 'change'} Lockstep wrote for ` +
        `"${unit.link.name ?? remoteOf(unit.link, from) ?? unit.link.id}": ` +
        `${error.message}${error.appCode ? ` (code ${error.appCode})` : ''}. The rest of the batch was ` +
        `written.`,
      suggested_action:
        `Fix the value in the ${from} record (or relax the constraint on the ${target} table ` +
        `"${sideEnd(pair, target).name}"); Lockstep writes it again when the record changes, at the ` +
        `next full scan, or when this issue is retried.`,
      links: [{ name: 'Record status', url: recordUrl(ctx, unit.link.id) }],
    },
    tableId: sideEnd(pair, target).id,
    tableName: sideEnd(pair, target).name,
    remoteId: remoteOf(unit.link, from),
    name: unit.link.name,
    recordUrl: recordUrl(ctx, unit.link.id),
  };
}
