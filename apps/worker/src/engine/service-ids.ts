/**
 * Service ids of the records an initial sync creates: derived, not random, so the create needs no intent row
 * in the store before the app sees it.
 *
 * The id is a version-8 UUID. Its first 48 bits mark the sync (a hash of the sync id); the rest is derived
 * from the initial sync's run, the table pair, the source side and the source record's remote id
 * (`IdScheme`). So:
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

/**
 * How a run derives its ids. 1: the rest of the id hashes run, pair, side and remote id (a run whose progress
 * has no `id_scheme`). 2 (every run prepared now): ids in the order of the source's keys where the remote id
 * is a plain integer (the common primary key), so that the copies' ids are inserted in order into the store's
 * and the target's service-id indexes instead of at random places. A run keeps its scheme when it resumes, so
 * a replayed page derives the same ids.
 */
export type IdScheme = 1 | 2;

export function initialServiceId(
  syncId: string,
  run: string,
  pair: number,
  side: SideName,
  remoteId: string,
  scheme: IdScheme = 1,
): string {
  const mark = syncMark(syncId);
  if (scheme === 2) return orderedServiceId(mark, run, pair, side, remoteId);
  const rest = sha1(`${run}\u0000${pair}\u0000${side}\u0000${remoteId}`);
  const variant = VARIANT[parseInt(rest[3]!, 16) & 3]!;
  return `${mark.slice(0, 8)}-${mark.slice(8, 12)}-8${rest.slice(0, 3)}-${variant}${rest.slice(4, 7)}-${rest.slice(7, 19)}`;
}

/** Plain integers below 10^13 (no sign, no leading zero): 11 hex digits hold them. */
const ORDERED_REMOTE_ID = /^(0|[1-9][0-9]{0,12})$/;

/**
 * Scheme 2. After the sync's mark and the version, 28 bits name the stream: a hash of the run and the pair,
 * whose last bit is the side, so a pass's ids share a prefix and the two sides' never meet. Then either
 *
 * - variant `a` and the rest of the stream, then the remote id as 11 hex digits (in the source's key order),
 *   or
 * - variant `8`/`9` and 61 bits of a hash of the run, pair, side and remote id, for any other remote id.
 *
 * The variants keep the two forms apart, and `createdBySync` reads the mark and the version as before.
 */
function orderedServiceId(mark: string, run: string, pair: number, side: SideName, remoteId: string): string {
  const stream = streamOf(run, pair, side);
  const head = `${mark.slice(0, 8)}-${mark.slice(8, 12)}-8${stream.slice(0, 3)}-`;
  if (ORDERED_REMOTE_ID.test(remoteId))
    return `${head}a${stream.slice(3, 6)}-${stream[6]}${Number(remoteId).toString(16).padStart(11, '0')}`;
  const rest = sha1(`${run}\u0000${pair}\u0000${side}\u0000${remoteId}`);
  return `${head}${(parseInt(rest[0]!, 16) & 1) === 0 ? '8' : '9'}${rest.slice(1, 4)}-${rest.slice(4, 16)}`;
}

function streamOf(run: string, pair: number, side: SideName): string {
  const key = `${run}\u0000${pair}\u0000${side}`;
  let stream = streams.get(key);
  if (stream === undefined) {
    const bits =
      (parseInt(sha1(`lockstep-stream:${run}\u0000${pair}`).slice(0, 7), 16) & ~1) |
      (side === 'right' ? 1 : 0);
    stream = bits.toString(16).padStart(7, '0');
    if (streams.size > 10_000) streams.clear();
    streams.set(key, stream);
  }
  return stream;
}

const streams = new Map<string, string>();

/** Whether a service id is one this sync derived (a record it created). */
export function createdBySync(syncId: string, serviceId: string | null | undefined): boolean {
  if (typeof serviceId !== 'string' || serviceId.length !== 36) return false;
  const mark = syncMark(syncId);
  const id = serviceId.toLowerCase();
  return id.startsWith(mark.slice(0, 8)) && id.slice(9, 13) === mark.slice(8, 12) && id[14] === '8';
}
