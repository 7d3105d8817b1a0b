import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { Scope } from '@lockstep/contracts';
import { AppConfig } from '@lockstep/config';
import { RedisClient } from '../../common/redis/redis.module';

/** What a person granted at the consent page, until the client exchanges the code. */
export interface AuthorizationGrant {
  accountId: string;
  scope: Scope;
  clientId: string;
  clientName: string;
  redirectUri: string;
  /** PKCE S256 challenge: base64url(SHA-256(code_verifier)). */
  codeChallenge: string;
}

/** A code is exchanged within this many seconds or never. */
export const CODE_TTL_SECONDS = 300;

/** PKCE S256 (RFC 7636 4.6): the verifier hashes to the challenge. */
export function pkceMatches(verifier: string, challenge: string): boolean {
  const computed = Buffer.from(createHash('sha256').update(verifier).digest('base64url'));
  const expected = Buffer.from(challenge);
  return computed.length === expected.length && timingSafeEqual(computed, expected);
}

/**
 * Authorization codes in Redis (shared by every API instance), stored under a hash of the code, taken once:
 * GETDEL makes a second exchange of the same code fail.
 */
@Injectable()
export class McpOAuthCodes {
  constructor(
    private readonly config: AppConfig,
    private readonly redis: RedisClient,
  ) {}

  async issue(grant: AuthorizationGrant): Promise<string> {
    const code = randomBytes(32).toString('base64url');
    await this.redis.client.set(this.keyOf(code), JSON.stringify(grant), 'EX', CODE_TTL_SECONDS);
    return code;
  }

  async take(code: string): Promise<AuthorizationGrant | null> {
    const stored = await this.redis.client.getdel(this.keyOf(code));
    return stored ? (JSON.parse(stored) as AuthorizationGrant) : null;
  }

  private keyOf(code: string): string {
    const digest = createHash('sha256').update(code).digest('hex');
    return `${this.config.QUEUE_PREFIX}:mcp-oauth:code:${digest}`;
  }
}
