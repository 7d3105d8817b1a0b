/**
 * The credential of an Airtable side: one personal access token (`apiKey`), or the tokens a browser sign-in
 * stored (`access_token`, `refresh_token`, `expires_at`: `oauth.ts`). The API's origin is the service's `AIRTABLE_API_URL` setting
 * (`ConnectContext.settings`, default https://api.airtable.com): for a proxy, and for the tests' simulator.
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
 * per base, 50 per second per token, and 30 s of 429s for everyone past either. The budget stays a little
 * under both, since two requests can arrive closer together than they left (the http layer's README). A bucket
 * of rate r and burst 1 lets at most 1 + r requests go in any second; at 4.75/s six requests span 1,053 ms, so
 * a one-second window of arrivals holds 5 unless two of them bunch by more than 50 ms on the way (one
 * connection sends its requests one after the other, so its own never bunch).
 */
export const BASE_RATE_PER_SECOND = 4.75;
export const TOKEN_RATE_PER_SECOND = 45;
export const PENALTY_MS = 30_000;

export interface AirtableSettings {
  /** A personal access token, or the access token of a signed-in side (renewed by `signIn`). */
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
    },
  ];
  if (base)
    rules.push({
      key: `airtable:base:${base}`,
      ratePerSecond: BASE_RATE_PER_SECOND,
      burst: 1,
      penaltyMs: PENALTY_MS,
    });
  return rules;
}
