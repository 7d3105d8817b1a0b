/**
 * Table setup: the service id field "Lockstep ID" (a single line text Lockstep fills on create, so a create
 * sent again adopts the record through an upsert on it) and, with change capture, the table's webhook.
 * Records that existed before keep an empty Lockstep ID: they are matched by the initial sync, never created
 * by Lockstep. Teardown removes the webhook and keeps the field and the data (Airtable's API cannot delete a
 * field).
 */
import type { PreparedTable, PrepareOptions } from '@lockstep/connectors-core';
import {
  createdWebhook,
  createWebhook,
  deleteWebhook,
  findWebhook,
  type WebhookInfo,
} from './change-capture';
import type { AirtableApi } from './db';
import type { SchemaCache } from './schema';
import { serviceIdField } from './schema';
import { createField } from './sql';
import { SERVICE_ID_FIELD_NAME } from './types';

const SERVICE_ID_DESCRIPTION =
  'Written by Lockstep when it creates a record, so a retried create never makes a duplicate. Do not edit.';

/** The service id field as created (by `prepareTable`, and with every table the connector creates). */
export const SERVICE_ID_FIELD = Object.freeze({
  name: SERVICE_ID_FIELD_NAME,
  type: 'singleLineText',
  description: SERVICE_ID_DESCRIPTION,
});

/**
 * How `prepareTable` finds a table's webhook (the connection's: through its short-lived list of the base's
 * webhooks, which the checkpoint that follows reuses) and tells the one it created.
 */
export interface TableWebhooks {
  find(tableId: string): Promise<WebhookInfo | undefined>;
  created(webhook: WebhookInfo): void;
}

export async function prepareTable(
  api: AirtableApi,
  schema: SchemaCache,
  idOrName: string,
  options: PrepareOptions,
  webhooks: TableWebhooks = {
    find: (tableId) => findWebhook(api, schema.baseId, tableId),
    created: () => undefined,
  },
): Promise<PreparedTable> {
  let table = await schema.table(idOrName);
  let service = serviceIdField(table);
  if (!service) {
    service = await createField(api, schema.baseId, table.id, { ...SERVICE_ID_FIELD }).catch(
      async (error: unknown) => {
        // Another holder added it meanwhile (Airtable refuses a second field of that name): adopt theirs.
        schema.invalidate();
        const added = serviceIdField(await schema.table(idOrName));
        if (added) return added;
        throw error;
      },
    );
    schema.invalidate();
    table = await schema.table(table.id);
  }
  if (options.changeCapture && !(await webhooks.find(table.id))) {
    const id = await createWebhook(api, schema.baseId, table.id);
    webhooks.created(createdWebhook(id, table.id));
  }
  return { serviceIdField: service.id, changeCapture: options.changeCapture };
}

export async function unprepareTable(api: AirtableApi, schema: SchemaCache, idOrName: string): Promise<void> {
  const table = await schema.find(idOrName);
  if (!table) return;
  const webhook = await findWebhook(api, schema.baseId, table.id);
  if (webhook) await deleteWebhook(api, schema.baseId, webhook.id);
}
