import type { INestApplicationContext } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { SyncEntity } from '@lockstep/persistence';
import { AccountsService } from '../accounts/accounts.service';
import { ApiKeysService } from '../api-keys/api-keys.service';
import { SyncStartService } from '../mappings/sync-start.service';
import { type PendingDeleteDecision, PendingDeletesService } from '../pending-deletes/pending-deletes.service';
import { OperatorAuth } from '../syncs/operator-auth';
import { SyncsService } from '../syncs/syncs.service';
import { optionalBool, optionalChoice, required, UsageError } from './args';
import { masterKeyRotate } from './master-key-command';

function jsonObject(options: Record<string, string>, name: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(required(options, name));
  } catch {
    throw new UsageError(`--${name} takes a JSON object, for example '{"connectionString":"postgres://..."}'`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new UsageError(`--${name} takes a JSON object`);
  return value as Record<string, unknown>;
}

type Command = (app: INestApplicationContext, options: Record<string, string>) => Promise<unknown>;

/** `pending-delete approve|ignore|restore`: a person's decision on a held delete, by the record's `rec_` id. */
function pendingDeleteCommand(decision: PendingDeleteDecision): { usage: string; run: Command } {
  return {
    usage: `pending-delete ${decision} --sync SYNC_ID --record REC_ID`,
    run: async (app, o) => {
      const syncId = required(o, 'sync');
      const recordId = required(o, 'record');
      const auth = await app.get(OperatorAuth).forSync(syncId);
      return app.get(PendingDeletesService).decide(auth, syncId, recordId, decision, 'cli');
    },
  };
}

/**
 * The operator CLI's commands: what a person does in the console, for operators and tests, through the
 * same services. Each prints its result as JSON.
 */
export const COMMANDS: Record<string, { usage: string; run: Command }> = {
  'account create': {
    usage: 'account create --email E --password P [--plan free|pro|business] [--api-enabled true|false] [--subscription active|none]',
    run: (app, o) =>
      app.get(AccountsService).create({
        email: required(o, 'email'),
        password: required(o, 'password'),
        plan: o.plan,
        apiEnabled: optionalBool(o, 'api-enabled'),
        subscription: optionalChoice(o, 'subscription', ['active', 'none'] as const),
      }),
  },
  'account update': {
    usage: 'account update --id ACC [--plan NAME] [--api-enabled true|false] [--subscription active|none] [--password P]',
    run: (app, o) =>
      app.get(AccountsService).update(required(o, 'id'), {
        plan: o.plan,
        apiEnabled: optionalBool(o, 'api-enabled'),
        subscription: optionalChoice(o, 'subscription', ['active', 'none'] as const),
        password: o.password,
      }),
  },
  'key create': {
    usage: 'key create --account ACC --name N --scope read|operate|readwrite [--sync SYNC_ID]',
    run: (app, o) => app.get(ApiKeysService).create(required(o, 'account'), { name: required(o, 'name'), scope: required(o, 'scope'), syncId: o.sync ?? null }),
  },
  'key revoke': {
    usage: 'key revoke --id KEY',
    run: (app, o) => app.get(ApiKeysService).revoke(required(o, 'id')),
  },
  'sync start': {
    usage: 'sync start --id SYNC_ID [--match TABLE_PAIR_INDEX:LEFT_FIELD=RIGHT_FIELD[,...]] [--prefer left|right] [--delete-approval review_required|auto_approve]',
    run: async (app, o) => {
      const syncId = required(o, 'id');
      // The person's choice at review: hold deletes for review (the default) or apply them.
      const deleteApproval = optionalChoice(o, 'delete-approval', ['review_required', 'auto_approve'] as const);
      const match = o.match === undefined ? undefined : o.match.split(',').map((item) => {
        const parsed = /^(\d+):([^=]+)=(.+)$/.exec(item.trim());
        if (!parsed) throw new UsageError(`--match takes TABLE_PAIR_INDEX:LEFT_FIELD=RIGHT_FIELD, not "${item}"`);
        return { tablePair: Number(parsed[1]), leftField: parsed[2]!, rightField: parsed[3]! };
      });
      const auth = await app.get(OperatorAuth).forSync(syncId);
      const started = await app.get(SyncStartService).start(auth, syncId, { match, prefer: optionalChoice(o, 'prefer', ['left', 'right'] as const) });
      if (deleteApproval === undefined) return started;
      // Set once the start succeeded (a refused start changes nothing); the engine reads it every round and
      // the initial sync it just started deletes nothing.
      await app.get(DataSource).getRepository(SyncEntity).update({ id: syncId }, { deleteApproval, updatedAt: new Date() });
      return app.get(SyncsService).get(auth, syncId);
    },
  },
  'side connect': {
    usage: 'side connect --sync SYNC_ID --side left|right --auth JSON --base BASE',
    run: async (app, o) => {
      const syncId = required(o, 'sync');
      const side = optionalChoice(o, 'side', ['left', 'right'] as const) ?? (() => { throw new UsageError('missing --side'); })();
      const auth = await app.get(OperatorAuth).forSync(syncId);
      return app.get(SyncsService).update(auth, syncId, { [side]: { auth: jsonObject(o, 'auth'), base: required(o, 'base') } }, 'cli');
    },
  },
  'pending-delete approve': pendingDeleteCommand('approve'),
  'pending-delete ignore': pendingDeleteCommand('ignore'),
  'pending-delete restore': pendingDeleteCommand('restore'),
  'key list': {
    usage: 'key list --account ACC',
    run: async (app, o) => ({ data: await app.get(ApiKeysService).list(required(o, 'account')) }),
  },
  'master-key rotate': masterKeyRotate,
};

export function findCommand(words: string[]): { usage: string; run: Command } {
  const command = COMMANDS[words.slice(0, 2).join(' ')];
  if (!command || words.length > 2) {
    throw new UsageError(`unknown command "${words.join(' ')}". Commands:\n  ${Object.values(COMMANDS).map((c) => c.usage).join('\n  ')}`);
  }
  return command;
}
