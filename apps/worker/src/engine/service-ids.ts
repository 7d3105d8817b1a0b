/**
 * Service ids of the records an initial sync creates: derived, not random, so the create needs no intent row
 * in the store before the app sees it.
 *
 * The id is a version-8 UUID. Its first 48 bits mark the sync (a hash of the sync id); the rest hash the
 * initial sync's run, the table pair, the source side and the source record's remote id. So:
 *
 * - a page replayed after a crash computes the same ids, and the connector's create adopts the rows the
 *   crashed attempt already wrote (the service id column is unique) instead of writing them twice;
 * - a copy whose link never reached the store (the crash came after the app write and before the page's
 *   commit) and whose source record was deleted before the replay is still recognised as this sync's own
 *   copy when it is read (`createdBySync`), so the delete rules apply to it rather than copying it back.
 */
import { hash } from 'node:crypto';
import type { SideName } from '@lockstep/domain';

const sha1 = (text: string): string => hash('sha1', text, 'hex');

/** The sync's 48-bit mark: the first 12 hex digits of every id this sync derives (UUID groups 1 and 2). */
function syncMark(syncId: string): string {
  let mark = marks.get(syncId);
  if (mark === undefined) {
    mark = sha1(`lockstep-sync:${syncId}`).slice(0, 12);
    if (marks.size > 10_000) marks.clear();
    marks.set(syncId, mark);
  }
  return mark;
}

const marks = new Map<string, string>();

const VARIANT = ['8', '9', 'a', 'b'];

export function initialServiceId(syncId: string, run: string, pair: number, side: SideName, remoteId: string): string {
  const mark = syncMark(syncId);
  const rest = sha1(`${run}\u0000${pair}\u0000${side}\u0000${remoteId}`);
  const variant = VARIANT[parseInt(rest[3]!, 16) & 3]!;
  return `${mark.slice(0, 8)}-${mark.slice(8, 12)}-8${rest.slice(0, 3)}-${variant}${rest.slice(4, 7)}-${rest.slice(7, 19)}`;
}

/** Whether a service id is one this sync derived (a record it created). */
export function createdBySync(syncId: string, serviceId: string | null | undefined): boolean {
  if (typeof serviceId !== 'string' || serviceId.length !== 36) return false;
  const mark = syncMark(syncId);
  const id = serviceId.toLowerCase();
  return id.startsWith(mark.slice(0, 8)) && id.slice(9, 13) === mark.slice(8, 12) && id[14] === '8';
}
