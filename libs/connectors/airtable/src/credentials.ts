/**
 * The credential of an Airtable side: one personal access token (`apiKey`), or the tokens a browser sign-in
 * stored (`access_token`, `refresh_token`, `expires_at`: `oauth.ts`). The API's origin is the service's
 * `AIRTABLE_API_URL` setting (`ConnectContext.settings`, default https://api.airtable.com): for a proxy, and
 * for the tests' simulator.
 * Nothing here puts the token into an error message.
 */
import { type ConnectContext, ConnectorError, type Credentials } from '@lockstep/connectors-core';
import type { RateRule } from '@lockstep/connectors-core';
import { budgetKeyOf } from '@lockstep/connectors-http';
import { AirtableSignIn, isSignedIn } from './oauth';

export const API_KEY_FIELD = 'apiKey';
export const DEFAULT_API_URL = 'https://api.airtable.com';
export const API_URL_SETTING = 'AIRTABLE_API_URL';

/**
 * Airtable's documented limits (https://airtable.com/developers/web/api/rate-limits): 5 requests per second
 * per base, 50 per second per token, and 30 s of 429s for everyone past either. Two rules keep every process
 * under them. A window per key (`RateRule.window`): this process sends at most 5 requests of a base (50 of a
 * token) whose time from leaving to a second after their answer overlaps, so the requests Airtable counts in
 * any second are never more than that, however late one of them arrived. And a bucket shared through Redis by
 * every process, a little under the documented rates: at rate r and burst 1 at most 1 + r requests leave in
 * any second, so at 4.75/s six requests span 1,053 ms and processes that share a base meet the limit only when
 * two of their requests bunch by more than 50 ms on the way.
 */
export const BASE_RATE_PER_SECOND = 4.75;
export const TOKEN_RATE_PER_SECOND = 45;
const BASE_WINDOW = { requests: 5, ms: 1000 };
const TOKEN_WINDOW = { requests: 50, ms: 1000 };
export const PENALTY_MS = 30_000;

export interface AirtableSettings {
  /** A personal access token, or a signed-in side whose access token `signIn` keeps renewed. */
  auth: { kind: 'token'; token: string } | { kind: 'signed_in'; signIn: AirtableSignIn };
  apiUrl: string;
}

export function parseCredentials(credentials: Credentials, context: ConnectContext): AirtableSettings {
  const apiUrl = context.settings?.[API_URL_SETTING]?.trim() || DEFAULT_API_URL;
  if (isSignedIn(credentials))
    return { auth: { kind: 'signed_in', signIn: new AirtableSignIn(credentials, context) }, apiUrl };
  const token = credentials[API_KEY_FIELD]?.trim();
  if (!token) {
    throw new ConnectorError('auth', 'The Airtable personal access token (apiKey) is empty');
  }
  if (/\s/.test(token)) {
    throw new ConnectorError('auth', 'The Airtable personal access token (apiKey) contains white space');
  }
  return { auth: { kind: 'token', token }, apiUrl };
}

/**
 * The budgets every request of a connection to `base` takes from (only the token's without a base). `token`
 * names the token's budget: the personal access token, or for a signed-in side where its tokens are stored
 * (its access token changes every hour); it is hashed, never sent to Redis.
 */
export function rateRules(token: string, base: string | null): RateRule[] {
  const rules: RateRule[] = [
    {
      key: budgetKeyOf('airtable', 'token', token),
      ratePerSecond: TOKEN_RATE_PER_SECOND,
      burst: 1,
      penaltyMs: PENALTY_MS,
      window: TOKEN_WINDOW,
    },
  ];
  if (base)
    rules.push({
      key: `airtable:base:${base}`,
      ratePerSecond: BASE_RATE_PER_SECOND,
      burst: 1,
      penaltyMs: PENALTY_MS,
      window: BASE_WINDOW,
    });
  return rules;
}
