/**
 * Change capture by Airtable webhooks read as a change log (design note "Change detection", item 1): a
 * webhook per table (`recordChangeScope`, data type `tableData`, no notification URL) whose payload log is
 * read by cursor (https://airtable.com/developers/web/api/list-webhook-payloads). The checkpoint is the
 * webhook id and the cursor (plus how many records of the payload at the cursor were already returned, so
 * `limit` is kept even inside a large payload). The webhook is refreshed when it has less than
 * `REFRESH_MARGIN_MS` left (Airtable drops one after 7 days without a refresh); one that is gone is created
 * again, and what changed meanwhile is caught up by the engine's full scan.
 *
 * Changes carry the record as it is when read (`readByIds` in the same call); `own` is always false: an
 * Airtable payload names the token's user, not the sync, and the engine's shadows recognise its own writes.
 */
import type { Change, ChangeBatch, ReadChangesOptions } from '@lockstep/connectors-core';
import type { AirtableApi } from './db';
import { rawByIds, toSourceRecord } from './records';
import type { AirtableTable } from './sql';

export const REFRESH_MARGIN_MS = 3 * 24 * 3600_000;
const PAYLOADS_PER_CALL = 50;
const enc = encodeURIComponent;

export interface WebhookInfo {
  id: string;
  cursorForNextPayload: number;
  expirationTime: string | null;
  notificationUrl: string | null;
  specification: { options?: { filters?: { dataTypes?: string[]; recordChangeScope?: string } } };
}

interface Payload {
  timestamp: string;
  changedTablesById?: Record<
    string,
    {
      createdRecordsById?: Record<string, unknown>;
      changedRecordsById?: Record<string, unknown>;
      destroyedRecordIds?: string[];
    }
  >;
}

/** The checkpoint: webhook id (null: no capture installed when it was taken), cursor, records already read. */
interface Checkpoint {
  w: string | null;
  c: number;
  k: number;
}

export function encodeCheckpoint(checkpoint: Checkpoint): string {
  return JSON.stringify(checkpoint);
}

export function decodeCheckpoint(text: string): Checkpoint {
  try {
    const parsed = JSON.parse(text) as Partial<Checkpoint>;
    return { w: parsed.w ?? null, c: Number(parsed.c ?? 1), k: Number(parsed.k ?? 0) };
  } catch {
    return { w: null, c: 1, k: 0 };
  }
}

/** https://airtable.com/developers/web/api/list-webhooks: every webhook of the base with its cursor. */
export async function listWebhooks(api: AirtableApi, baseId: string): Promise<WebhookInfo[]> {
  const result = await api.get<{ webhooks: WebhookInfo[] }>(`/v0/bases/${enc(baseId)}/webhooks`, {
    baseId,
    context: 'Listing webhooks',
  });
  return result.webhooks;
}

/** This table's Lockstep webhook: table data of this table only, no notification URL. */
export async function findWebhook(
  api: AirtableApi,
  baseId: string,
  tableId: string,
): Promise<WebhookInfo | undefined> {
  return webhookOf(await listWebhooks(api, baseId), tableId);
}

export function webhookOf(webhooks: WebhookInfo[], tableId: string): WebhookInfo | undefined {
  return webhooks.find((webhook) => {
    const filters = webhook.specification?.options?.filters;
    return (
      webhook.notificationUrl === null &&
      filters?.recordChangeScope === tableId &&
      filters.dataTypes?.length === 1 &&
      filters.dataTypes[0] === 'tableData'
    );
  });
}

/** https://airtable.com/developers/web/api/create-a-webhook */
export async function createWebhook(api: AirtableApi, baseId: string, tableId: string): Promise<string> {
  const response = await api.request<{ id: string }>({
    method: 'POST',
    path: `/v0/bases/${enc(baseId)}/webhooks`,
    baseId,
    json: {
      specification: { options: { filters: { dataTypes: ['tableData'], recordChangeScope: tableId } } },
    },
    context: 'Creating the webhook of the table',
  });
  return response.data.id;
}

/**
 * The webhook `createWebhook` just made, as the list of webhooks would describe it: a new webhook's next
 * payload is number 1 (https://airtable.com/developers/web/api/list-webhook-payloads), so a checkpoint taken
 * from this is never later than one taken from a list read afterwards.
 */
export function createdWebhook(id: string, tableId: string): WebhookInfo {
  return {
    id,
    cursorForNextPayload: 1,
    expirationTime: null,
    notificationUrl: null,
    specification: { options: { filters: { dataTypes: ['tableData'], recordChangeScope: tableId } } },
  };
}

/** https://airtable.com/developers/web/api/delete-a-webhook */
export async function deleteWebhook(api: AirtableApi, baseId: string, webhookId: string): Promise<void> {
  await api.request({
    method: 'DELETE',
    path: `/v0/bases/${enc(baseId)}/webhooks/${enc(webhookId)}`,
    baseId,
    context: 'Removing the webhook of the table',
  });
}

/** https://airtable.com/developers/web/api/refresh-a-webhook, when less than the margin is left. */
async function refreshIfDue(api: AirtableApi, baseId: string, webhook: WebhookInfo): Promise<void> {
  const expires = webhook.expirationTime ? Date.parse(webhook.expirationTime) : Number.NaN;
  if (!Number.isNaN(expires) && expires - api.now() > REFRESH_MARGIN_MS) return;
  await api.request({
    method: 'POST',
    path: `/v0/bases/${enc(baseId)}/webhooks/${enc(webhook.id)}/refresh`,
    baseId,
    context: 'Refreshing the webhook of the table',
  });
}

/** The table's position now, from its webhook as listed (none installed: a checkpoint without webhook). */
export function checkpointOf(webhook: WebhookInfo | undefined): string {
  return encodeCheckpoint({ w: webhook?.id ?? null, c: webhook?.cursorForNextPayload ?? 1, k: 0 });
}

/** One entry per record id in the payload (in log order): the last kind wins, `at` the payload's time. */
function recordsOf(payload: Payload, tableId: string): { id: string; deleted: boolean; at: string }[] {
  const change = payload.changedTablesById?.[tableId];
  if (!change) return [];
  const ids = [
    ...Object.keys(change.createdRecordsById ?? {}).map((id) => ({ id, deleted: false })),
    ...Object.keys(change.changedRecordsById ?? {}).map((id) => ({ id, deleted: false })),
    ...(change.destroyedRecordIds ?? []).map((id) => ({ id, deleted: true })),
  ];
  return ids.map((entry) => ({ ...entry, at: payload.timestamp }));
}

export async function readChanges(
  api: AirtableApi,
  baseId: string,
  table: AirtableTable,
  since: string,
  options: ReadChangesOptions,
): Promise<ChangeBatch> {
  const from = decodeCheckpoint(since);
  let webhook = await findWebhook(api, baseId, table.id);
  if (!webhook && from.w !== null) {
    // Capture was installed and the webhook is gone (it expired while nobody read it): install it again.
    await createWebhook(api, baseId, table.id);
    webhook = await findWebhook(api, baseId, table.id);
  }
  if (!webhook) return { changes: [], checkpoint: encodeCheckpoint({ w: null, c: 1, k: 0 }), hasMore: false };
  await refreshIfDue(api, baseId, webhook);
  // A checkpoint of another (expired, removed) webhook: the log starts again now; the full scan catches up.
  const position = from.w === webhook.id ? from : { w: webhook.id, c: webhook.cursorForNextPayload, k: 0 };
  const seen = new Map<string, { id: string; deleted: boolean; at: string }>();
  let { c: cursor, k: skip } = position;
  let hasMore = false;
  reading: for (;;) {
    const page = await api.get<{ payloads: Payload[]; cursor: number; mightHaveMore: boolean }>(
      `/v0/bases/${enc(baseId)}/webhooks/${enc(webhook.id)}/payloads`,
      { baseId, query: { cursor, limit: PAYLOADS_PER_CALL }, context: 'Reading the changes of the table' },
    );
    const first = page.cursor - page.payloads.length;
    for (const [index, payload] of page.payloads.entries()) {
      if (first + index < cursor) continue;
      const entries = recordsOf(payload, table.id);
      for (let k = skip; k < entries.length; k += 1) {
        const entry = entries[k]!;
        if (!seen.has(entry.id) && seen.size >= options.limit) {
          skip = k;
          hasMore = true;
          break reading;
        }
        seen.delete(entry.id);
        seen.set(entry.id, entry);
      }
      cursor = first + index + 1;
      skip = 0;
    }
    if (!page.mightHaveMore || page.payloads.length === 0) {
      cursor = Math.max(cursor, page.cursor);
      break;
    }
  }
  const changes = await toChanges(api, baseId, table, [...seen.values()], options.view ?? null);
  return { changes, checkpoint: encodeCheckpoint({ w: webhook.id, c: cursor, k: skip }), hasMore };
}

/**
 * Upserts carry the record as it is now; a record gone since, or outside `view` (it left what the sync sees,
 * as a full scan through the view would find), is reported deleted.
 */
async function toChanges(
  api: AirtableApi,
  baseId: string,
  table: AirtableTable,
  entries: { id: string; deleted: boolean; at: string }[],
  view: string | null,
): Promise<Change[]> {
  const upserts = entries.filter((entry) => !entry.deleted).map((entry) => entry.id);
  const raw = upserts.length > 0 ? await rawByIds(api, baseId, table, upserts, view) : [];
  const records = new Map(raw.map((record) => [record.id, toSourceRecord(table, record)]));
  return entries.map((entry): Change => {
    const record = entry.deleted ? undefined : records.get(entry.id);
    const at = new Date(Date.parse(entry.at) || Date.now()).toISOString();
    return record
      ? { kind: 'upsert', remoteId: entry.id, record, at, own: false }
      : { kind: 'delete', remoteId: entry.id, at, own: false };
  });
}
