/**
 * The credential of an Airtable side: one personal access token (`apiKey`), or the access token a browser
 * sign-in left in the same field. The API's origin is the service's `AIRTABLE_API_URL` setting
 * (`ConnectContext.settings`, default https://api.airtable.com): for a proxy, and for the tests' simulator.
 * Nothing here puts the token into an error message.
 */
import { type ConnectContext, ConnectorError, type Credentials } from '@lockstep/connectors-core';
import type { RateRule } from '@lockstep/connectors-core';
import { budgetKeyOf } from '@lockstep/connectors-http';

export const API_KEY_FIELD = 'apiKey';
export const DEFAULT_API_URL = 'https://api.airtable.com';
export const API_URL_SETTING = 'AIRTABLE_API_URL';

/**
 * Airtable's documented limits (https://airtable.com/developers/web/api/rate-limits): 5 requests per second
 * per base, 50 per second per token, and 30 s of 429s for everyone past either. The budget stays a little
 * under both, since two requests can arrive closer together than they left (the http layer's README).
 */
export const BASE_RATE_PER_SECOND = 4.5;
export const TOKEN_RATE_PER_SECOND = 45;
export const PENALTY_MS = 30_000;

export interface AirtableSettings {
  token: string;
  apiUrl: string;
}

export function parseCredentials(credentials: Credentials, context: ConnectContext): AirtableSettings {
  const token = credentials[API_KEY_FIELD]?.trim();
  if (!token) {
    throw new ConnectorError('auth', 'The Airtable personal access token (apiKey) is empty');
  }
  if (/\s/.test(token)) {
    throw new ConnectorError('auth', 'The Airtable personal access token (apiKey) contains white space');
  }
  const apiUrl = context.settings?.[API_URL_SETTING]?.trim() || DEFAULT_API_URL;
  return { token, apiUrl };
}

/** The budgets every request of a connection to `base` takes from (only the token's without a base). */
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
