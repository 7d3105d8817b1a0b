/**
 * OAuth access tokens renewed before they expire, by one holder at a time. The holder of the lock (Redis
 * through `ConnectContext.shared`) reads the stored token again, refreshes it only if it is still due, and
 * saves it; everyone else waits for the lock to go and then reads the token the holder saved. In one process,
 * concurrent callers share one refresh. A refresh the app refuses is kind `auth`: the person must sign in
 * again (the API marks the side `auth_status: error` with a "reconnect in the console" issue).
 */
import { type ConnectorCoordination, ConnectorError, isConnectorError } from '@lockstep/connectors-core';
import { localCoordination, sleep } from './budget';

export interface OAuthToken {
  accessToken: string;
  refreshToken?: string | null;
  /** When the access token expires (epoch ms); null when the app does not say. */
  expiresAt: number | null;
}

/**
 * Where the side's tokens live (encrypted with its other credentials); shared by every holder of the side.
 */
export interface TokenStore {
  load(): Promise<OAuthToken>;
  save(token: OAuthToken): Promise<void>;
}

export interface TokenKeeperOptions {
  /** The lock's key: one per signed-in account and app, never a secret (`budgetKeyOf`). */
  lockKey: string;
  store: TokenStore;
  /** Asks the app for a new access token (the token endpoint's `refresh_token` grant). */
  refresh(current: OAuthToken): Promise<OAuthToken>;
  shared?: ConnectorCoordination;
  /** Renew this long before the expiry (default 60 s). */
  marginMs?: number;
  /** The longest a refresh may hold the lock (default 30 s). */
  lockTtlMs?: number;
  /** The longest a caller waits for another holder's refresh (default 45 s). */
  waitMs?: number;
  pollMs?: number;
}

export class TokenKeeper {
  private current: OAuthToken | null = null;
  private renewing: Promise<OAuthToken> | null = null;
  /** An access token the app answered 401 to: it is not used again, whatever its expiry says. */
  private rejected: string | null = null;

  constructor(private readonly options: TokenKeeperOptions) {}

  /** A usable access token, renewed first when it expires within the margin. */
  async accessToken(): Promise<string> {
    if (this.current && this.usable(this.current)) return this.current.accessToken;
    this.renewing ??= this.renew().finally(() => {
      this.renewing = null;
    });
    this.current = await this.renewing;
    return this.current.accessToken;
  }

  /** Headers for `HttpClientOptions.headers`. */
  async authorization(): Promise<Record<string, string>> {
    return { authorization: `Bearer ${await this.accessToken()}` };
  }

  /** For `HttpClientOptions.onUnauthorized`: the app refused the current token; renew it once. */
  async invalidate(): Promise<boolean> {
    if (!this.current) return false;
    this.rejected = this.current.accessToken;
    await this.accessToken();
    return true;
  }

  private usable(token: OAuthToken): boolean {
    if (token.accessToken === this.rejected) return false;
    return token.expiresAt === null || token.expiresAt - Date.now() > (this.options.marginMs ?? 60_000);
  }

  private async renew(): Promise<OAuthToken> {
    const { store, shared = localCoordination() } = this.options;
    const deadline = Date.now() + (this.options.waitMs ?? 45_000);
    for (;;) {
      const stored = await store.load();
      if (this.usable(stored)) return stored;
      const release = await shared.locks.tryAcquire(
        `oauth:${this.options.lockKey}`,
        this.options.lockTtlMs ?? 30_000,
      );
      if (release) {
        try {
          // Read again under the lock: the previous holder may have saved a new token since.
          const latest = await store.load();
          if (this.usable(latest)) return latest;
          const renewed = await this.refresh(latest);
          await store.save(renewed);
          return renewed;
        } finally {
          await release();
        }
      }
      if (Date.now() > deadline) {
        throw new ConnectorError(
          'transient',
          'Another connection is renewing the sign-in and has not finished; try again',
        );
      }
      await sleep(this.options.pollMs ?? 100);
    }
  }

  private async refresh(token: OAuthToken): Promise<OAuthToken> {
    if (!token.refreshToken)
      throw new ConnectorError('auth', 'The sign-in expired and cannot be renewed; reconnect in the console');
    try {
      return await this.options.refresh(token);
    } catch (error) {
      if (isConnectorError(error) && error.retryable) throw error;
      const reason = isConnectorError(error) ? error.message : 'the app refused the renewal';
      const appCode = isConnectorError(error) ? error.appCode : undefined;
      throw new ConnectorError(
        'auth',
        `The app refused to renew the sign-in (${reason}); reconnect in the console`,
        { appCode },
      );
    }
  }
}
