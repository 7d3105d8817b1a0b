import type { CanonicalValue } from '@lockstep/domain';
import { canonicalEqual } from '@lockstep/domain';
import type { ConnectorErrorInfo, ConnectorErrorKind, SourceRecord } from './connector';

/** Kinds that a later attempt may fix by itself; the engine retries these with backoff. */
const RETRYABLE: Record<ConnectorErrorKind, boolean> = {
  auth: false,
  permission: false,
  not_found: false,
  rate_limited: true,
  transient: true,
  invalid_data: false,
  unsupported: false,
  changed: false,
};

/** Network and TLS errors Node.js raises before the app answers: the app is unreachable for now. */
export const NODE_NETWORK_CODES: Readonly<Record<string, ConnectorErrorKind>> = Object.freeze({
  ECONNREFUSED: 'transient',
  ECONNRESET: 'transient',
  ETIMEDOUT: 'transient',
  ENOTFOUND: 'transient',
  EAI_AGAIN: 'transient',
  EHOSTUNREACH: 'transient',
  ENETUNREACH: 'transient',
  EPIPE: 'transient',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'transient',
  SELF_SIGNED_CERT_IN_CHAIN: 'transient',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'transient',
  CERT_HAS_EXPIRED: 'transient',
  ERR_TLS_CERT_ALTNAME_INVALID: 'transient',
});

/**
 * The one error a connector throws. The engine decides retry versus issue from `kind` alone; `message`
 * is safe to show a person (never contains credentials); `appCode` is the app's or driver's own code.
 */
export class ConnectorError extends Error {
  readonly kind: ConnectorErrorKind;
  readonly appCode?: string;
  /** Seconds the app asked us to wait (rate limits), when it said. */
  readonly retryAfterSeconds?: number;

  constructor(
    kind: ConnectorErrorKind,
    message: string,
    options: { appCode?: string; retryAfterSeconds?: number } = {},
  ) {
    super(message);
    this.name = 'ConnectorError';
    this.kind = kind;
    this.appCode = options.appCode;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  get retryable(): boolean {
    return RETRYABLE[this.kind];
  }

  toInfo(): ConnectorErrorInfo {
    return { kind: this.kind, message: this.message, retryable: this.retryable, appCode: this.appCode };
  }
}

export function isConnectorError(error: unknown): error is ConnectorError {
  return error instanceof ConnectorError;
}

/**
 * The field of `expected` whose value `record` no longer holds (compared as canonical values), or null when
 * it holds them all: the check behind a conditional update (`RecordUpdate.expected`).
 */
export function changedField(
  record: SourceRecord,
  expected: Record<string, CanonicalValue> | undefined,
): string | null {
  if (!expected) return null;
  for (const [field, value] of Object.entries(expected)) {
    if (!canonicalEqual(record.values[field] ?? null, value ?? null)) return field;
  }
  return null;
}

/** The result of a conditional update whose record changed since it was read. */
export function changedError(table: string, remoteId: string, field: string): ConnectorError {
  return new ConnectorError(
    'changed',
    `Record "${remoteId}" in "${table}" was edited since it was read (field "${field}"); nothing was written`,
  );
}
