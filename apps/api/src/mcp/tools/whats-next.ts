import type { PendingActionDto, SyncDto } from '@lockstep/contracts';
import type { AuthContext } from '../../common/auth/auth-context';
import type { ToolServices } from './tool-services';

/** The one next step for a sync: a tool the agent calls, or what a person does at a link. */
export type NextStep =
  | { who: 'agent'; tool: string; arguments: Record<string, string>; reason: string }
  | ({ who: 'person'; reason: string } & Pick<PendingActionDto, 'type' | 'url' | 'instruction' | 'side'>);

export interface WhatsNext {
  sync_id: string;
  status: string;
  next_step: NextStep;
}

const agent = (
  tool: string,
  syncId: string,
  reason: string,
  extra: Record<string, string> = {},
): NextStep => ({
  who: 'agent',
  tool,
  arguments: { sync_id: syncId, ...extra },
  reason,
});

const person = (action: PendingActionDto, reason: string): NextStep => ({
  who: 'person',
  type: action.type,
  side: action.side,
  url: action.url,
  instruction: action.instruction,
  reason,
});

/**
 * The single next step, in the order a sync is built and run: connect both sides, fix what is broken, map,
 * validate, a person reviews and starts it, turn a paused sync on, deletes a person must review, then watch.
 * Derived from the sync's state, `pending_actions` and links; reads only.
 */
export async function whatsNext(s: ToolServices, auth: AuthContext, syncId: string): Promise<WhatsNext> {
  const sync = await s.syncs.get(auth, syncId);
  return { sync_id: sync.id, status: sync.status, next_step: await nextStep(s, auth, sync) };
}

async function nextStep(s: ToolServices, auth: AuthContext, sync: SyncDto): Promise<NextStep> {
  const connect = sync.pending_actions.find((a) => a.type === 'user_authorization');
  if (connect || !sync.left || !sync.right) {
    if (connect)
      return person(connect, `The ${connect.side ?? ''} side is not connected; a person connects it.`);
    return agent('sync_get', sync.id, 'A side is not connected yet; read the sync again in a moment.');
  }
  if (sync.open_issues > 0) {
    return agent('sync_list_issues', sync.id, `${sync.open_issues} open issue(s): read their remediation.`);
  }
  if (sync.status === 'draft') return draftStep(s, auth, sync);
  if (sync.status === 'paused') return agent('sync_activate', sync.id, 'The sync is paused; activate it.');
  if ((sync.pending_deletes ?? 0) > 0) {
    return agent(
      'sync_list_pending_deletes',
      sync.id,
      `${sync.pending_deletes} delete(s) wait for a person's review: list them and relay each \`review_url\`.`,
    );
  }
  return agent(
    'sync_get_status',
    sync.id,
    'The sync is running and nothing waits; watch it (status, operations, issues).',
  );
}

async function draftStep(s: ToolServices, auth: AuthContext, sync: SyncDto): Promise<NextStep> {
  const { document } = await s.mappings.get(auth, sync.id);
  if (document.tables.length === 0) {
    return agent(
      'sync_list_tables',
      sync.id,
      'Nothing is mapped yet: list the tables of both sides, then map them with sync_update_mappings.',
      { side: 'left' },
    );
  }
  const { issues } = await s.mappings.validate(auth, sync.id, undefined);
  const errors = issues.filter((issue) => issue.severity === 'error').length;
  if (errors > 0) {
    return agent(
      'sync_validate_mappings',
      sync.id,
      `${errors} mapping error(s) keep the sync from starting: read them and fix the mappings with sync_update_mappings.`,
    );
  }
  const confirm = sync.pending_actions.find((a) => a.type === 'user_confirmation');
  const action: PendingActionDto = confirm ?? {
    type: 'user_confirmation',
    audience: 'end_user',
    action: 'open_in_browser',
    side: null,
    url: sync.review_url,
    instruction: 'Ask a person to open the link, review the sync and start it.',
  };
  return person(action, 'The mappings are valid; only a person can review and start a draft sync.');
}
