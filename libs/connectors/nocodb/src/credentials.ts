/**
 * The credentials of a NocoDB side: the server's address (`baseUrl`, checked by the egress policy like any
 * connection target) and an API token (`apiToken`, sent as `xc-token`). Nothing here puts the token into an
 * error message.
 */
import {
  type ConnectContext,
  ConnectorError,
  type Credentials,
  type RateRule,
} from '@lockstep/connectors-core';
import { budgetKeyOf } from '@lockstep/connectors-http';

export const BASE_URL_FIELD = 'baseUrl';
export const API_TOKEN_FIELD = 'apiToken';
/** The service setting that overrides the default budget (requests per second per token). */
export const RATE_SETTING = 'NOCODB_REQUESTS_PER_SECOND';

/**
 * The default budget without `NOCODB_REQUESTS_PER_SECOND`: NocoDB Cloud (`*.nocodb.com`) answers requests past
 * its per-user limit with 429 (https://nocodb.com/docs/apis/errors), so its servers get 5 requests/s; a
 * self-hosted NocoDB 0.301 has no limit of its own (its data API limiter is an Enterprise feature) but a
 * server to spare: 20 requests/s (the benchmark's NocoDB took that beside its own bulk insert).
 */
export const CLOUD_RATE_PER_SECOND = 5;
export const SELF_HOSTED_RATE_PER_SECOND = 20;
/** NocoDB sends `Retry-After` with its 429s only sometimes; without it, a pause of a few seconds. */
export const PENALTY_MS = 5_000;

export interface NocodbSettings {
  baseUrl: string;
  token: string;
  ratePerSecond: number;
}

export function parseCredentials(credentials: Credentials, context: ConnectContext): NocodbSettings {
  const raw = credentials[BASE_URL_FIELD]?.trim() ?? '';
  if (!raw) throw new ConnectorError('auth', 'The NocoDB address (baseUrl) is empty');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConnectorError(
      'invalid_data',
      'The NocoDB address (baseUrl) is not a URL (https://nocodb.example.com)',
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConnectorError('invalid_data', 'The NocoDB address (baseUrl) must be an http(s) URL');
  }
  if (url.username || url.password || url.search || url.hash) {
    throw new ConnectorError(
      'invalid_data',
      'The NocoDB address (baseUrl) must not carry a user, query or fragment',
    );
  }
  const token = credentials[API_TOKEN_FIELD]?.trim();
  if (!token) throw new ConnectorError('auth', 'The NocoDB API token (apiToken) is empty');
  if (/\s/.test(token))
    throw new ConnectorError('auth', 'The NocoDB API token (apiToken) contains white space');
  const rate = Number(context.settings?.[RATE_SETTING] ?? '');
  return {
    baseUrl: `${url.origin}${url.pathname.replace(/\/+$/, '')}`,
    token,
    ratePerSecond:
      Number.isFinite(rate) && rate > 0
        ? rate
        : /(^|\.)nocodb\.com$/i.test(url.hostname)
          ? CLOUD_RATE_PER_SECOND
          : SELF_HOSTED_RATE_PER_SECOND,
  };
}

/** The one budget every request of a token to a server takes from, shared by every holder of the token. */
export function rateRules(settings: NocodbSettings): RateRule[] {
  return [
    {
      key: budgetKeyOf('nocodb', 'token', `${settings.baseUrl} ${settings.token}`),
      ratePerSecond: settings.ratePerSecond,
      burst: 1,
      penaltyMs: PENALTY_MS,
    },
  ];
}
