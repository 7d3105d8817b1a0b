/**
 * Webhook endpoints of the Airtable Web API, as documented:
 * - create a webhook: https://airtable.com/developers/web/api/create-a-webhook (expires after 7 days),
 * - list webhooks: https://airtable.com/developers/web/api/list-webhooks,
 * - refresh a webhook: https://airtable.com/developers/web/api/refresh-a-webhook (7 more days),
 * - delete a webhook: https://airtable.com/developers/web/api/delete-a-webhook,
 * - list webhook payloads: https://airtable.com/developers/web/api/list-webhook-payloads (by `cursor`, at
 *   most 50 per call, `mightHaveMore`; payloads are kept for 7 days),
 * - the payload shape: https://airtable.com/developers/web/api/model/webhooks-payload.
 * Notification pings to `notificationUrl` are not sent: the connector reads payloads by cursor.
 */
import { randomBytes } from 'node:crypto';
import type { Committed } from './simulator-records';
import type { SimBase, SimTable, SimTableChange, SimWebhook } from './simulator-model';
import { simId } from './simulator-model';
import { SimError } from './simulator-values';

export const WEBHOOK_LIFETIME_MS = 7 * 24 * 3600_000;
export const MAX_PAYLOADS_PER_CALL = 50;

function webhookOf(base: SimBase, id: string, now: number): SimWebhook {
  const webhook = base.webhooks.get(id);
  if (!webhook || webhook.expiresAt <= now) {
    if (webhook) base.webhooks.delete(id);
    throw new SimError(404, 'NOT_FOUND', `Could not find webhook ${id}`);
  }
  return webhook;
}

export function createWebhook(
  base: SimBase,
  body: { notificationUrl?: unknown; specification?: SimWebhook['specification'] },
  now: number,
) {
  const dataTypes = body.specification?.options?.filters?.dataTypes;
  if (!Array.isArray(dataTypes) || dataTypes.length === 0) {
    throw new SimError(422, 'INVALID_REQUEST_UNKNOWN', 'specification.options.filters.dataTypes is required');
  }
  const webhook: SimWebhook = {
    id: simId('ach'),
    macSecretBase64: randomBytes(32).toString('base64'),
    notificationUrl: typeof body.notificationUrl === 'string' ? body.notificationUrl : null,
    expiresAt: now + WEBHOOK_LIFETIME_MS,
    specification: body.specification!,
    payloads: [],
    nextNumber: 1,
  };
  base.webhooks.set(webhook.id, webhook);
  return {
    id: webhook.id,
    macSecretBase64: webhook.macSecretBase64,
    expirationTime: new Date(webhook.expiresAt).toISOString(),
  };
}

export function listWebhooks(base: SimBase, now: number) {
  const live = [...base.webhooks.values()].filter((webhook) => webhook.expiresAt > now);
  return {
    webhooks: live.map((webhook) => ({
      id: webhook.id,
      specification: webhook.specification,
      notificationUrl: webhook.notificationUrl,
      cursorForNextPayload: webhook.nextNumber,
      expirationTime: new Date(webhook.expiresAt).toISOString(),
      areNotificationsEnabled: webhook.notificationUrl !== null,
      isHookEnabled: true,
      lastSuccessfulNotificationTime: null,
      lastNotificationResult: null,
    })),
  };
}

export function refreshWebhook(base: SimBase, id: string, now: number) {
  const webhook = webhookOf(base, id, now);
  webhook.expiresAt = now + WEBHOOK_LIFETIME_MS;
  return { expirationTime: new Date(webhook.expiresAt).toISOString() };
}

export function deleteWebhook(base: SimBase, id: string, now: number): void {
  webhookOf(base, id, now);
  base.webhooks.delete(id);
}

export function listPayloads(base: SimBase, id: string, query: URLSearchParams, now: number) {
  const webhook = webhookOf(base, id, now);
  webhook.payloads = webhook.payloads.filter((entry) => entry.at > now - WEBHOOK_LIFETIME_MS);
  const cursor = Number(query.get('cursor') ?? 1);
  const limit = Number(query.get('limit') ?? MAX_PAYLOADS_PER_CALL);
  if (
    !Number.isInteger(cursor) ||
    cursor < 1 ||
    !Number.isInteger(limit) ||
    limit < 1 ||
    limit > MAX_PAYLOADS_PER_CALL
  ) {
    throw new SimError(
      422,
      'INVALID_REQUEST_UNKNOWN',
      'cursor must be a positive integer and limit between 1 and 50',
    );
  }
  const page = webhook.payloads.filter((entry) => entry.number >= cursor).slice(0, limit);
  const next =
    page.length > 0
      ? page.at(-1)!.number + 1
      : Math.max(cursor, webhook.payloads[0]?.number ?? webhook.nextNumber);
  return {
    payloads: page.map((entry) => entry.payload),
    cursor: next,
    mightHaveMore: next < webhook.nextNumber,
  };
}

/** Appends a payload to every live webhook of the base whose filters take this table's data. */
export function recordPayload(
  base: SimBase,
  table: SimTable,
  change: Committed,
  source: 'publicApi' | 'client',
  now: number,
): void {
  const tableChange: SimTableChange = {};
  if (change.created.length > 0) {
    tableChange.createdRecordsById = Object.fromEntries(
      change.created.map((record) => [
        record.id,
        { createdTime: record.createdTime, cellValuesByFieldId: { ...record.fields } },
      ]),
    );
  }
  if (change.changed.length > 0) {
    tableChange.changedRecordsById = Object.fromEntries(
      change.changed.map((record) => [record.id, { current: { cellValuesByFieldId: { ...record.fields } } }]),
    );
  }
  if (change.destroyed.length > 0) tableChange.destroyedRecordIds = [...change.destroyed];
  base.transaction += 1;
  for (const webhook of base.webhooks.values()) {
    const filters = webhook.specification.options.filters;
    if (webhook.expiresAt <= now || !filters.dataTypes.includes('tableData')) continue;
    if (filters.recordChangeScope && filters.recordChangeScope !== table.id) continue;
    webhook.payloads.push({
      number: webhook.nextNumber,
      at: now,
      payload: {
        timestamp: new Date(now).toISOString(),
        baseTransactionNumber: base.transaction,
        payloadFormat: 'v0',
        actionMetadata: { source, sourceMetadata: {} },
        changedTablesById: { [table.id]: tableChange },
      },
    });
    webhook.nextNumber += 1;
  }
}
