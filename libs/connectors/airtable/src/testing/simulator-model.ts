/**
 * The simulator's data: bases, tables, fields, views, records and each base's webhooks with their payload
 * log, in memory. Values are stored by field id in the shapes the Web API returns
 * (https://airtable.com/developers/web/api/field-model); validation of written values is in
 * `simulator-values.ts`.
 */
import { randomBytes } from 'node:crypto';

export interface SimField {
  id: string;
  name: string;
  type: string;
  options?: Record<string, unknown>;
  description?: string;
}

export interface SimView {
  id: string;
  name: string;
  type: 'grid';
  /** The simulator's stand-in for a view's filter: only records for which it is true are in the view. */
  filter?: (record: SimRecord) => boolean;
}

export interface SimRecord {
  id: string;
  createdTime: string;
  modifiedTime: string;
  /** Field id -> value; an empty value is absent, as the API omits it. */
  fields: Record<string, unknown>;
}

export interface SimTable {
  id: string;
  name: string;
  description?: string;
  primaryFieldId: string;
  fields: SimField[];
  views: SimView[];
  /** In creation order: the order `list records` returns without a sort. */
  records: Map<string, SimRecord>;
  nextAutoNumber: number;
}

/** One entry of a webhook's payload log (https://airtable.com/developers/web/api/model/webhooks-payload). */
export interface SimPayload {
  timestamp: string;
  baseTransactionNumber: number;
  payloadFormat: 'v0';
  actionMetadata: { source: 'publicApi' | 'client'; sourceMetadata: Record<string, unknown> };
  changedTablesById: Record<string, SimTableChange>;
}

export interface SimTableChange {
  createdRecordsById?: Record<string, { createdTime: string; cellValuesByFieldId: Record<string, unknown> }>;
  changedRecordsById?: Record<string, { current: { cellValuesByFieldId: Record<string, unknown> } }>;
  destroyedRecordIds?: string[];
}

export interface SimWebhook {
  id: string;
  macSecretBase64: string;
  notificationUrl: string | null;
  /** Epoch ms on the simulator's clock. */
  expiresAt: number;
  specification: { options: { filters: { dataTypes: string[]; recordChangeScope?: string } } };
  /** Payload number n (1-based) is `payloads[n - firstNumber]`; older ones were dropped. */
  payloads: { number: number; at: number; payload: SimPayload }[];
  nextNumber: number;
}

export interface SimBase {
  id: string;
  name: string;
  tables: SimTable[];
  webhooks: Map<string, SimWebhook>;
  transaction: number;
}

const ID_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** An Airtable-shaped id: a three-letter prefix and 14 letters or digits (`rec`, `tbl`, `fld`, `viw`...). */
export function simId(prefix: string): string {
  const bytes = randomBytes(14);
  return prefix + [...bytes].map((byte) => ID_CHARS[byte % ID_CHARS.length]).join('');
}

export function findTable(base: SimBase, idOrName: string): SimTable | undefined {
  return (
    base.tables.find((table) => table.id === idOrName) ?? base.tables.find((table) => table.name === idOrName)
  );
}

export function findField(table: SimTable, idOrName: string): SimField | undefined {
  return (
    table.fields.find((field) => field.id === idOrName) ??
    table.fields.find((field) => field.name === idOrName)
  );
}

/** A record's values keyed by field id or by field name, as `returnFieldsByFieldId` asks. */
export function recordJson(table: SimTable, record: SimRecord, byId: boolean, only?: Set<string>) {
  const fields: Record<string, unknown> = {};
  for (const field of table.fields) {
    if (only && !only.has(field.id)) continue;
    const value = record.fields[field.id];
    if (value !== undefined) fields[byId ? field.id : field.name] = value;
  }
  return { id: record.id, createdTime: record.createdTime, fields };
}

export function fieldJson(field: SimField) {
  return {
    id: field.id,
    name: field.name,
    type: field.type,
    ...(field.options ? { options: field.options } : {}),
    ...(field.description ? { description: field.description } : {}),
  };
}

export function tableJson(table: SimTable) {
  return {
    id: table.id,
    name: table.name,
    primaryFieldId: table.primaryFieldId,
    ...(table.description ? { description: table.description } : {}),
    fields: table.fields.map(fieldJson),
    views: table.views.map((view) => ({ id: view.id, name: view.name, type: view.type })),
  };
}
