import type { SyncDto } from '@lockstep/contracts';

/** Short texts that open a tool result; the JSON itself follows them. */

export function pageSummary(what: string, page: { data: unknown[]; has_more: boolean }): string {
  const more = page.has_more
    ? ' More exist: call again with `cursor` set to `next_cursor`.'
    : ' That is all of them.';
  return `${page.data.length} ${what}.${more}`;
}

export function syncSummary(sync: SyncDto, verb = 'Sync'): string {
  const sides = [sync.left, sync.right]
    .map((side, i) => `${i === 0 ? 'left' : 'right'} ${side ? side.connector : 'not connected'}`)
    .join(', ');
  const actions = sync.pending_actions.length
    ? ` Waiting for a person: ${sync.pending_actions.map((a) => a.type).join(', ')} (relay each \`instruction\` and \`url\`).`
    : '';
  return `${verb} ${sync.id} "${sync.name}" is ${sync.status} (${sides}); ${sync.open_issues} open issue(s).${actions}`;
}
