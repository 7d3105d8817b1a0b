/**
 * Stage 2: the other side's current values where a record has a copy there that was not observed. A copy not
 * found by id is not taken as deleted here: its absence is checked by a queued `verify_delete`.
 */
import { sideEnd } from '../plan';
import { deletedOn, remoteOf } from '@lockstep/persistence';
import { type Batch, pick, SIDES } from './types';

export async function readOtherSide(batch: Batch): Promise<void> {
  const { ctx, pair } = batch;
  for (const side of SIDES) {
    const wanted = [...batch.units.values()].filter(
      (unit) =>
        unit.current[side] === null && remoteOf(unit.link, side) !== null && !deletedOn(unit.link, side),
    );
    if (wanted.length === 0) continue;
    await ctx.assertCanWrite();
    const ids = wanted.map((unit) => remoteOf(unit.link, side)!);
    const found = await ctx.sides[side].use((connection) =>
      connection.readByIds(sideEnd(pair, side).remoteId, ids),
    );
    const byId = new Map(found.map((record) => [record.remoteId, record]));
    for (const unit of wanted) {
      const record = byId.get(remoteOf(unit.link, side)!);
      if (record) unit.current[side] = pick(record.values, batch.fields[side]);
      else batch.queue.push({ recordId: unit.link.id, side, type: 'verify_delete' });
    }
  }
}
