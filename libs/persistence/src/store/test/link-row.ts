import type { LinkRow } from '../record-links/record-links';

/**
 * A plain link for store tests: record `n` on both sides (remote ids `L<n>` / `R<n>`, a name, a shadow each,
 * fixed hashes, every flag off), its service id `<digit>...-<n>` so that suites using different digits never
 * collide on the service-id index. `overrides` replaces any column.
 */
export function linkRow(id: string, n: number, digit: number, overrides: Partial<LinkRow> = {}): LinkRow {
  const d = String(digit);
  return {
    id,
    service_id: `${d.repeat(8)}-${d.repeat(4)}-4${d.repeat(3)}-8${d.repeat(3)}-${String(n).padStart(12, '0')}`,
    table_pair: 0,
    name: `name ${n}`,
    left_remote_id: `L${n}`,
    right_remote_id: `R${n}`,
    left_shadow: { name: `name ${n}` },
    right_shadow: { name: `name ${n}` },
    left_hash: 'lh',
    right_hash: 'rh',
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
    ...overrides,
  };
}
