/** What `connect()` does once loaded: the credentials and settings -> an HTTP client -> a connection. */
import type { ConnectContext, Credentials } from '@lockstep/connectors-core';
import { AirtableConnection } from './connection';
import { parseCredentials } from './credentials';
import { AirtableApi, type AirtableApiOptions } from './db';

export async function connectAirtable(
  credentials: Credentials,
  base: string | null,
  context: ConnectContext,
  options: AirtableApiOptions = {},
): Promise<AirtableConnection> {
  const settings = parseCredentials(credentials, context);
  const trimmed = base?.trim();
  return new AirtableConnection(new AirtableApi(settings, context, options), trimmed ? trimmed : null);
}
