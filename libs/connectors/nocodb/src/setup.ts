/**
 * Table setup: the service id field "Lockstep ID" (a single line text Lockstep fills on create, so a create
 * sent again adopts the record it finds there) and, with change capture, the table's webhook: one NocoDB
 * webhook (v3: after insert, update and delete, bulk ones included) that calls Lockstep's notification
 * endpoint `PUBLIC_URL/hooks/nocodb/<channel>` with the channel's signature in a header and the changed
 * records' keys in a small body. Without PUBLIC_URL (or the hook key) no webhook is installed and the table is
 * polled alone. Records that existed before keep an empty Lockstep ID: the initial sync matches them.
 * Teardown removes the webhook and keeps the field and the data.
 */
import { ConnectorError, type PreparedTable, type PrepareOptions } from '@lockstep/connectors-core';
import { HOOK_SIGNATURE_HEADER, hookSignature } from '@lockstep/connectors-http';
import { channelOf } from './change-capture';
import type { NocodbApi } from './db';
import { keyColumn, type SchemaCache, serviceIdColumn } from './schema';
import { createColumn, createHook, deleteHook, listHooks, type NocodbHook, type NocodbTable } from './sql';
import { SERVICE_ID_FIELD_NAME } from './types';

export const HOOK_TITLE = 'Lockstep change notification';

export const SERVICE_ID_COLUMN = Object.freeze({
  title: SERVICE_ID_FIELD_NAME,
  column_name: 'lockstep_id',
  uidt: 'SingleLineText',
  meta: {
    description: 'Written by Lockstep when it creates a record (a retried create adopts it). Do not edit.',
  },
});

export interface HookSettings {
  /** Lockstep's public address, as NocoDB must call it. */
  publicUrl: string | null;
  hookKey: string | null;
}

export function hookUrl(publicUrl: string, channel: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/hooks/nocodb/${channel}`;
}

function pathOf(hook: NocodbHook): string {
  const raw = hook.notification;
  const notification = typeof raw === 'string' ? (JSON.parse(raw || '{}') as Record<string, unknown>) : raw;
  const payload = (notification?.payload ?? {}) as { path?: unknown };
  return typeof payload.path === 'string' ? payload.path : '';
}

/** The table's Lockstep webhooks (by the channel in their URL, whatever PUBLIC_URL was when installed). */
export async function lockstepHooks(
  api: NocodbApi,
  table: NocodbTable,
  channel: string,
): Promise<NocodbHook[]> {
  const hooks = await listHooks(api, table.id);
  return hooks.filter((hook) => pathOf(hook).endsWith(`/hooks/nocodb/${channel}`));
}

/**
 * The webhook's body: the event type and the changed records' keys (NocoDB renders it with Handlebars), small
 * whatever the records hold. The endpoint uses the keys of deleted records as hints only.
 */
function hookBody(table: NocodbTable): string {
  const key = keyColumn(table).title.replace(/[\]"{}]/g, '');
  return (
    '{"type":"{{event.type}}","ids":[{{#each event.data.rows}}"{{this.[' +
    key +
    ']}}"{{#unless @last}},{{/unless}}{{/each}}]}'
  );
}

export async function installHook(
  api: NocodbApi,
  table: NocodbTable,
  settings: HookSettings,
): Promise<boolean> {
  if (!settings.publicUrl || !settings.hookKey) return false;
  const channel = channelOf(api.settings.baseUrl, table.id);
  const url = hookUrl(settings.publicUrl, channel);
  const existing = await lockstepHooks(api, table, channel);
  if (existing.some((hook) => pathOf(hook) === url && hook.active !== false)) return true;
  for (const hook of existing) await deleteHook(api, hook.id);
  await createHook(api, table.id, {
    title: HOOK_TITLE,
    event: 'after',
    operation: ['insert', 'update', 'delete'],
    notification: {
      type: 'URL',
      payload: {
        method: 'POST',
        path: url,
        headers: [
          { enabled: true, name: HOOK_SIGNATURE_HEADER, value: hookSignature(settings.hookKey, channel) },
        ],
        parameters: [],
        body: hookBody(table),
      },
    },
    version: 'v3',
    active: true,
  });
  return true;
}

export async function prepareTable(
  api: NocodbApi,
  schema: SchemaCache,
  idOrTitle: string,
  options: PrepareOptions,
  hooks: HookSettings,
): Promise<PreparedTable> {
  let table = await schema.table(idOrTitle);
  keyColumn(table);
  let service = serviceIdColumn(table);
  if (!service) {
    await createColumn(api, table.id, { ...SERVICE_ID_COLUMN }).catch(async (error: unknown) => {
      // Another holder added it meanwhile (NocoDB refuses a second column of that name): adopt theirs.
      schema.invalidate(table.id);
      if (!serviceIdColumn(await schema.table(table.id))) throw error;
    });
    schema.invalidate(table.id);
    table = await schema.table(table.id);
    service = serviceIdColumn(table);
    if (!service)
      throw new ConnectorError('transient', `NocoDB did not add the Lockstep ID field to "${table.title}"`);
  }
  if (options.changeCapture) await installHook(api, table, hooks);
  return { serviceIdField: service.id, changeCapture: options.changeCapture };
}

export async function unprepareTable(api: NocodbApi, schema: SchemaCache, idOrTitle: string): Promise<void> {
  const table = await schema.find(idOrTitle);
  if (!table) return;
  for (const hook of await lockstepHooks(api, table, channelOf(api.settings.baseUrl, table.id))) {
    await deleteHook(api, hook.id);
  }
}
