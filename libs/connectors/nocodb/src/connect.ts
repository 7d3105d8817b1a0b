/** What `connect()` does once loaded: the credentials and settings -> an HTTP client -> a connection. */
import type { ConnectContext, Credentials } from '@lockstep/connectors-core';
import { NocodbConnection } from './connection';
import { parseCredentials } from './credentials';
import { NocodbApi, type NocodbApiOptions } from './db';

/** The service settings the connector reads (`ConnectContext.settings`). */
export const POLL_SETTING = 'NOCODB_POLL_SECONDS';
export const PUBLIC_URL_SETTING = 'PUBLIC_URL';
export const HOOK_KEY_SETTING = 'NOCODB_HOOK_KEY';
export const DEFAULT_POLL_SECONDS = 5;

export async function connectNocodb(
  credentials: Credentials,
  base: string | null,
  context: ConnectContext,
  options: NocodbApiOptions = {},
): Promise<NocodbConnection> {
  const settings = parseCredentials(credentials, context);
  const trimmed = base?.trim();
  const poll = Number(context.settings?.[POLL_SETTING] ?? '');
  return new NocodbConnection(new NocodbApi(settings, context, options), trimmed ? trimmed : null, {
    hooks: {
      publicUrl: context.settings?.[PUBLIC_URL_SETTING]?.trim() || null,
      hookKey: context.settings?.[HOOK_KEY_SETTING]?.trim() || null,
    },
    pollMs: (Number.isFinite(poll) && poll > 0 ? poll : DEFAULT_POLL_SECONDS) * 1000,
    signals: context.shared?.signals ?? null,
  });
}
