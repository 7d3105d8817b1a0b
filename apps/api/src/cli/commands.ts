import type { INestApplicationContext } from '@nestjs/common';
import { AccountsService } from '../accounts/accounts.service';
import { ApiKeysService } from '../api-keys/api-keys.service';
import { SyncStartService } from '../mappings/sync-start.service';
import {
  type PendingDeleteDecision,
  PendingDeletesService,
} from '../pending-deletes/pending-deletes.service';
import { OperatorAuth } from '../syncs/operator-auth';
import { SyncsService } from '../syncs/syncs.service';
import {
  checkOptions,
  optionalBool,
  optionalChoice,
  type OptionSpecs,
  type OptionValues,
  UsageError,
  usageLine,
} from './args';
import { masterKeyRotate } from './master-key-command';
import { MCP_BRIDGE_USAGE } from './mcp-bridge';

function jsonObject(text: string, name: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new UsageError(
      `--${name} takes a JSON object, for example '{"connectionString":"postgres://..."}'`,
    );
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw new UsageError(`--${name} takes a JSON object`);
  }
  return value as Record<string, unknown>;
}

type Run<S extends OptionSpecs> = (
  app: INestApplicationContext,
  options: OptionValues<S>,
) => Promise<unknown>;

/**
 * A command: the options it takes (the parser accepts these and no other; the usage lists them) and its work.
 */
export interface Command {
  options: OptionSpecs;
  run: Run<OptionSpecs>;
}

/** Declares a command; `run` sees exactly the declared options, a required one as a string. */
function command<const S extends OptionSpecs>(options: S, run: Run<S>): Command {
  return { options, run: run as Run<OptionSpecs> };
}

/**
 * `pending-delete approve|ignore|restore`: a person's decision on a held delete, by the record's `rec_` id.
 */
function pendingDeleteCommand(decision: PendingDeleteDecision): Command {
  return command(
    { sync: { value: 'SYNC_ID', required: true }, record: { value: 'REC_ID', required: true } },
    async (app, o) => {
      const auth = await app.get(OperatorAuth).forSync(o.sync);
      return app.get(PendingDeletesService).decide(auth, o.sync, o.record, decision, 'cli');
    },
  );
}

/** `--match 0:email=email,1:code=ref`: the match field per table pair of an initial sync. */
function matchList(text: string | undefined) {
  if (text === undefined) return undefined;
  return text.split(',').map((item) => {
    const parsed = /^(\d+):([^=]+)=(.+)$/.exec(item.trim());
    if (!parsed) throw new UsageError(`--match takes TABLE_PAIR_INDEX:LEFT_FIELD=RIGHT_FIELD, not "${item}"`);
    return { tablePair: Number(parsed[1]), leftField: parsed[2]!, rightField: parsed[3]! };
  });
}

const SWITCH = { value: 'true|false' } as const;
const SUBSCRIPTION = { value: 'active|none' } as const;

/**
 * The operator CLI's commands: what a person does in the console, for operators and tests, through the
 * same services. Each prints its result as JSON.
 */
export const COMMANDS: Record<string, Command> = {
  'account create': command(
    {
      email: { value: 'E', required: true },
      password: { value: 'P', required: true },
      plan: { value: 'free|pro|business' },
      'api-enabled': SWITCH,
      subscription: SUBSCRIPTION,
    },
    (app, o) =>
      app.get(AccountsService).create({
        email: o.email,
        password: o.password,
        plan: o.plan,
        apiEnabled: optionalBool(o, 'api-enabled'),
        subscription: optionalChoice(o, 'subscription', ['active', 'none'] as const),
      }),
  ),
  'account update': command(
    {
      id: { value: 'ACC', required: true },
      plan: { value: 'NAME' },
      'api-enabled': SWITCH,
      subscription: SUBSCRIPTION,
      password: { value: 'P' },
    },
    (app, o) =>
      app.get(AccountsService).update(o.id, {
        plan: o.plan,
        apiEnabled: optionalBool(o, 'api-enabled'),
        subscription: optionalChoice(o, 'subscription', ['active', 'none'] as const),
        password: o.password,
      }),
  ),
  'key create': command(
    {
      account: { value: 'ACC', required: true },
      name: { value: 'N', required: true },
      scope: { value: 'read|operate|readwrite', required: true },
      sync: { value: 'SYNC_ID' },
    },
    (app, o) =>
      app.get(ApiKeysService).create(o.account, { name: o.name, scope: o.scope, syncId: o.sync ?? null }),
  ),
  'key revoke': command({ id: { value: 'KEY', required: true } }, (app, o) =>
    app.get(ApiKeysService).revoke(o.id),
  ),
  'sync start': command(
    {
      id: { value: 'SYNC_ID', required: true },
      match: { value: 'TABLE_PAIR_INDEX:LEFT_FIELD=RIGHT_FIELD[,...]' },
      prefer: { value: 'left|right' },
      'delete-approval': { value: 'review_required|auto_approve' },
    },
    async (app, o) => {
      // The person's choice at review: hold deletes for review (the default) or apply them.
      const deleteApproval = optionalChoice(o, 'delete-approval', [
        'review_required',
        'auto_approve',
      ] as const);
      const match = matchList(o.match);
      const auth = await app.get(OperatorAuth).forSync(o.id);
      const started = await app
        .get(SyncStartService)
        .start(auth, o.id, { match, prefer: optionalChoice(o, 'prefer', ['left', 'right'] as const) });
      if (deleteApproval === undefined) return started;
      // Set once the start succeeded (a refused start changes nothing); the engine reads it every round and
      // the initial sync it just started deletes nothing.
      await app.get(SyncsService).setDeleteApproval(o.id, deleteApproval);
      return app.get(SyncsService).get(auth, o.id);
    },
  ),
  'side connect': command(
    {
      sync: { value: 'SYNC_ID', required: true },
      side: { value: 'left|right', required: true },
      auth: { value: 'JSON', required: true },
      base: { value: 'BASE', required: true },
    },
    async (app, o) => {
      const side = optionalChoice(o, 'side', ['left', 'right'] as const)!;
      const auth = await app.get(OperatorAuth).forSync(o.sync);
      return app
        .get(SyncsService)
        .update(auth, o.sync, { [side]: { auth: jsonObject(o.auth, 'auth'), base: o.base } }, 'cli');
    },
  ),
  'pending-delete approve': pendingDeleteCommand('approve'),
  'pending-delete ignore': pendingDeleteCommand('ignore'),
  'pending-delete restore': pendingDeleteCommand('restore'),
  'key list': command({ account: { value: 'ACC', required: true } }, async (app, o) => ({
    data: await app.get(ApiKeysService).list(o.account),
  })),
  'master-key rotate': command({ batch: { value: 'N' } }, (app, o) => masterKeyRotate(app, o.batch)),
};

/** Every command with its options: what the CLI prints when it does not know what it was asked. */
export function usageText(): string {
  return `Commands:\n  ${[...Object.entries(COMMANDS).map(([name, c]) => usageLine(name, c.options)), MCP_BRIDGE_USAGE].join('\n  ')}`;
}

/** The command the words name, with the options given checked against its list. */
export function findCommand(
  words: string[],
  options: Record<string, string>,
): { name: string; command: Command; values: OptionValues<OptionSpecs> } {
  const name = words.slice(0, 2).join(' ');
  const command = COMMANDS[name];
  if (!command || words.length > 2) {
    throw new UsageError(`unknown command "${words.join(' ')}". ${usageText()}`);
  }
  return { name, command, values: checkOptions(name, command.options, options) };
}
