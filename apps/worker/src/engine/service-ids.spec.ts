import { randomUUID } from 'node:crypto';
import { createdBySync, initialServiceId } from './service-ids';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('derived service ids of an initial sync', () => {
  it('are version-8 UUIDs, the same for the same run, pair, side and record, different otherwise', () => {
    const id = initialServiceId('sync_a', 'run1', 0, 'left', '42');
    expect(id).toMatch(UUID);
    expect(initialServiceId('sync_a', 'run1', 0, 'left', '42')).toBe(id);
    const others = [
      initialServiceId('sync_a', 'run2', 0, 'left', '42'),
      initialServiceId('sync_a', 'run1', 1, 'left', '42'),
      initialServiceId('sync_a', 'run1', 0, 'right', '42'),
      initialServiceId('sync_a', 'run1', 0, 'left', '43'),
      initialServiceId('sync_b', 'run1', 0, 'left', '42'),
    ];
    for (const other of others) expect(other).not.toBe(id);
    expect(new Set(Array.from({ length: 5000 }, (_, index) => initialServiceId('sync_a', 'run1', 0, 'left', String(index)))).size).toBe(5000);
  });

  it('tell the sync that derived them from every other id', () => {
    const id = initialServiceId('sync_a', 'run1', 0, 'left', '42');
    expect(createdBySync('sync_a', id)).toBe(true);
    expect(createdBySync('sync_a', id.toUpperCase())).toBe(true);
    expect(createdBySync('sync_a', initialServiceId('sync_a', 'another run', 3, 'right', 'x'))).toBe(true);
    expect(createdBySync('sync_b', id)).toBe(false);
    for (let index = 0; index < 1000; index += 1) expect(createdBySync('sync_a', randomUUID())).toBe(false);
    expect(createdBySync('sync_a', null)).toBe(false);
    expect(createdBySync('sync_a', undefined)).toBe(false);
    expect(createdBySync('sync_a', 'not a uuid')).toBe(false);
  });
});
