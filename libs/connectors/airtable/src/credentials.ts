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
 * every process, a little under the documented rates: at rate r and burst 1 + r * g, six requests span at
 * least 5 / r - g, so at 4.75/s and g = `PACE_GRACE_MS` (8 ms) six requests span 1,045 ms and processes that
 * share a base meet the limit only when two of their requests bunch by more than 45 ms on the way.
 *
 * The grace is what keeps a stream of requests on the bucket's pace: a caller comes back for the next request
 * a few milliseconds after the bucket refilled (the timer, the jitter, the round trip to Redis); with a burst of
 * exactly 1 that lateness is lost at every request (about 1.2% of the rate, measured), with the grace the next
 * request may leave that much earlier, so the average stays at r. It never lets more than 1 + g * r requests
 * leave together, and the windows below still hold.
 */
export const BASE_RATE_PER_SECOND = 4.75;
export const TOKEN_RATE_PER_SECOND = 45;
export const PACE_GRACE_MS = 8;
const BASE_BURST = 1 + (BASE_RATE_PER_SECOND * PACE_GRACE_MS) / 1000;
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
      burst: BASE_BURST,
      penaltyMs: PENALTY_MS,
      window: BASE_WINDOW,
    });
  return rules;
}
