/**
 * Stage 1: observations -> units. The latest observation per record, the links they belong to (by remote id,
 * or by the service id a record this sync created carries), and a new link for a record seen for the first
 * time.
 */
import { randomUUID } from 'node:crypto';
import { setImmediate } from 'node:timers/promises';
import { newId } from '@lockstep/domain';
import type { EngineContext } from '../context';
import type { PairPlan } from '../plan';
import { createdBySync, initialServiceId } from '../service-ids';
import { deletedOn, type LinkRow, loadLinks, remoteOf } from '@lockstep/persistence';
import {
  type Batch,
  mappedFields,
  type Observation,
  pick,
  type ReconcileRequest,
  type Unit,
  YIELD_EVERY,
} from './types';

/** The links of one call, by remote id per side and by service id. */
interface LinkIndex {
  byRemote: { left: Map<string, LinkRow>; right: Map<string, LinkRow> };
  byService: Map<string, LinkRow>;
}

export async function observe(
  ctx: EngineContext,
  pair: PairPlan,
  observations: Observation[],
  request: ReconcileRequest,
): Promise<Batch> {
  const batch: Batch = {
    ctx,
    pair,
    request,
    fields: { left: mappedFields(pair, 'left'), right: mappedFields(pair, 'right') },
    units: new Map(),
    reappeared: new Set(),
    queue: [],
    issues: [],
    result: { created: { left: 0, right: 0 }, updated: { left: 0, right: 0 }, failed: 0, verifyDeletes: 0 },
    now: '',
  };
  const obs = request.kind === 'initial' ? observations : latestPerRecord(observations);
  const index = await indexLinks(batch, obs);
  let seenCount = 0;
  for (const o of obs) {
    if (++seenCount % YIELD_EVERY === 0) await setImmediate();
    const found = linkFor(batch, index, o);
    if (!found) continue;
    const { link, isNew, orphan } = found;
    const unit = unitFor(batch, link, isNew);
    unit.orphan ||= orphan;
    unit.current[o.side] = pick(o.record.values, batch.fields[o.side]);
    unit.at[o.side] = o.at;
    // A record seen again on a side where it was marked deleted has reappeared: its pending delete closes by
    // itself.
    if (!isNew && deletedOn(link, o.side)) batch.reappeared.add(link.id);
    if (o.side === 'left') link.left_deleted = false;
    else link.right_deleted = false;
  }
  return batch;
}

/**
 * The latest observation of each record, in the order records were first observed. An initial sync's page
 * needs none of this: it holds each record once (a page of a keyset read).
 */
function latestPerRecord(observations: Observation[]): Observation[] {
  const latest = new Map<string, Observation>();
  for (const observation of observations)
    latest.set(`${observation.side}:${observation.remoteId}`, observation);
  return [...latest.values()];
}

/** Loads the links of the observed records (none for an unlinked initial sync pass). */
async function indexLinks(batch: Batch, obs: Observation[]): Promise<LinkIndex> {
  const { ctx, pair, request } = batch;
  const index: LinkIndex = { byRemote: { left: new Map(), right: new Map() }, byService: new Map() };
  if (request.kind === 'initial' && request.unlinked) return index;
  const ids = {
    left: obs.filter((o) => o.side === 'left').map((o) => o.remoteId),
    right: obs.filter((o) => o.side === 'right').map((o) => o.remoteId),
  };
  const serviceIds = { own: [] as string[], unplaced: [] as string[] };
  for (const o of obs) {
    const id = o.record.serviceId;
    if (typeof id === 'string' && /^[0-9a-f-]{36}$/i.test(id))
      (createdBySync(ctx.syncId, id) ? serviceIds.own : serviceIds.unplaced).push(id);
  }
  const links = await loadLinks(ctx.db, ctx.syncId, pair.index, ids.left, ids.right, serviceIds);
  for (const link of links) {
    if (link.left_remote_id !== null) index.byRemote.left.set(link.left_remote_id, link);
    if (link.right_remote_id !== null) index.byRemote.right.set(link.right_remote_id, link);
    index.byService.set(link.service_id, link);
  }
  return index;
}

/** The link of an observed record: found, adopted by service id, or new; null when the record is skipped. */
function linkFor(
  batch: Batch,
  index: LinkIndex,
  o: Observation,
): { link: LinkRow; isNew: boolean; orphan: boolean } | null {
  const { ctx, pair, request } = batch;
  const link = index.byRemote[o.side].get(o.remoteId);
  if (link) return { link, isNew: false, orphan: false };
  if (o.record.serviceId) {
    // A row this sync created (its service id is the link's) whose remote id was not stored before a crash:
    // adopt it.
    const adopted = index.byService.get(o.record.serviceId.toLowerCase());
    if (adopted && remoteOf(adopted, o.side) === null) {
      if (o.side === 'left') adopted.left_remote_id = o.remoteId;
      else adopted.right_remote_id = o.remoteId;
      if (adopted.create_pending === o.side) adopted.create_pending = null;
      return { link: adopted, isNew: false, orphan: false };
    }
  }
  if (request.kind === 'initial' && request.skip.size > 0 && request.skip.has(`${o.side}:${o.remoteId}`))
    return null;
  const orphan =
    createdBySync(ctx.syncId, o.record.serviceId) && !index.byService.has(o.record.serviceId!.toLowerCase());
  const serviceId = orphan ? o.record.serviceId!.toLowerCase() : newServiceId(batch, o);
  const created = blankLink(pair.index, serviceId);
  if (o.side === 'left') created.left_remote_id = o.remoteId;
  else created.right_remote_id = o.remoteId;
  index.byRemote[o.side].set(o.remoteId, created);
  index.byService.set(serviceId, created);
  return { link: created, isNew: true, orphan };
}

/** An initial sync's new link takes a service id derived from its run; any other a random one. */
function newServiceId(batch: Batch, o: Observation): string {
  const { ctx, pair, request } = batch;
  if (request.kind !== 'initial' || !request.initialRun) return randomUUID();
  const scheme = request.initialIdScheme ?? 1;
  return initialServiceId(ctx.syncId, request.initialRun, pair.index, o.side, o.remoteId, scheme);
}

function unitFor(batch: Batch, link: LinkRow, isNew: boolean): Unit {
  let unit = batch.units.get(link.id);
  if (!unit) {
    unit = {
      link,
      isNew,
      current: { left: null, right: null },
      at: { left: null, right: null },
      writes: { left: null, right: null },
      shadow: { left: {}, right: {} },
      ops: [],
      conflicts: [],
      deferred: false,
      kept: { left: false, right: false },
      merged: false,
      orphan: false,
    };
    batch.units.set(link.id, unit);
  }
  return unit;
}

function blankLink(pair: number, serviceId: string): LinkRow {
  return {
    id: newId('record'),
    service_id: serviceId,
    table_pair: pair,
    name: null,
    left_remote_id: null,
    right_remote_id: null,
    left_shadow: null,
    right_shadow: null,
    left_hash: null,
    right_hash: null,
    left_deleted: false,
    right_deleted: false,
    left_filtered: false,
    right_filtered: false,
    left_sync_disabled: false,
    right_sync_disabled: false,
    dead: false,
    create_pending: null,
    left_changed_at: null,
    right_changed_at: null,
  };
}
