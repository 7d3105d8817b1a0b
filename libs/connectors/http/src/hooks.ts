/**
 * What an app connector's webhooks and the API's notification endpoint (`POST /hooks/<app>/<channel>`) agree
 * on: the signal channel a call wakes, and the signature header that proves the URL was registered by this
 * service (HMAC-SHA256 of the channel with a key derived from the master key: `hookKey` in @lockstep/config).
 * An app that signs its own calls (Airtable, Notion) checks its own header instead.
 */
import { createHmac } from 'node:crypto';

export const HOOK_SIGNATURE_HEADER = 'x-lockstep-signature';

export function hookSignature(key: string, channel: string): string {
  return createHmac('sha256', key).update(channel).digest('hex');
}

/** The `ChangeSignals` channel a notification to `/hooks/<app>/<channel>` publishes on. */
export function hookSignalChannel(app: string, channel: string): string {
  return `${app}:${channel}`;
}

/** Hints one notification may carry (a bulk delete of 100 records is well under it). */
export const MAX_HOOK_HINTS = 1000;

/**
 * The hints a notification body carries: the body connectors have apps send is `{ "type": "...", "ids": [...] }`
 * (NocoDB renders it from its webhook template), and only the ids of a delete (`type` ending in `.delete`) are
 * hints, since nothing else can be read back. Ids that cannot be matched by the app's filters are left out.
 */
export function hookHints(body: unknown): string[] {
  if (typeof body !== 'object' || body === null) return [];
  const { type, ids } = body as { type?: unknown; ids?: unknown };
  if (typeof type !== 'string' || !/\.delete$/.test(type) || !Array.isArray(ids)) return [];
  return ids
    .filter((id): id is string | number => typeof id === 'string' || typeof id === 'number')
    .map(String)
    .filter((id) => id !== '' && id.length <= 100 && !/[,()~]/.test(id))
    .slice(0, MAX_HOOK_HINTS);
}
