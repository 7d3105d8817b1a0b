/**
 * Relation values go through the record links of their target pair: the targets are loaded before deciding.
 */
import type { SideName } from '@lockstep/domain';
import type { EngineContext } from '../context';
import { fieldEnd, type PairPlan } from '../plan';
import { relationTargets } from '@lockstep/persistence';
import { SIDES, type Unit } from './types';

export class Relations {
  private readonly maps = new Map<string, Map<string, string>>();
  constructor(private readonly ctx: EngineContext) {}

  /** Loads the links of every relation target the units' values name. */
  async preload(pair: PairPlan, units: Unit[]): Promise<void> {
    for (const field of pair.fields) {
      if (field.relationPair === null) continue;
      for (const side of SIDES) {
        const ids = new Set<string>();
        for (const unit of units) {
          const value = unit.current[side]?.[fieldEnd(field, side).remoteId];
          for (const id of Array.isArray(value) ? value : [value])
            if (typeof id === 'string' || typeof id === 'number') ids.add(String(id));
        }
        if (ids.size === 0) continue;
        const rows = await relationTargets(this.ctx.db, this.ctx.syncId, field.relationPair, side, [...ids]);
        const map = this.targets(field.relationPair, side);
        for (const row of rows) if (row.target !== null) map.set(row.source, row.target);
      }
    }
  }

  /**
   * Remote id on `from` -> remote id on the other side, for the records of pair `pairIndex` loaded so far.
   */
  targets(pairIndex: number, from: SideName): Map<string, string> {
    const key = `${pairIndex}:${from}`;
    let map = this.maps.get(key);
    if (!map) {
      map = new Map();
      this.maps.set(key, map);
    }
    return map;
  }
}
