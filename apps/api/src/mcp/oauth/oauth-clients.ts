import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AppConfig } from '@lockstep/config';

/** A client registered through dynamic client registration (RFC 7591): a public client (PKCE, no secret). */
export interface McpOAuthClient {
  client_id: string;
  client_name: string;
  redirect_uris: string[];
  client_id_issued_at: number;
}

/** An OAuth error answer (RFC 6749 5.2, RFC 7591 3.2.2). */
export class OAuthError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly status = 400,
  ) {
    super(description);
  }

  body(): { error: string; error_description: string } {
    return { error: this.error, error_description: this.description };
  }
}

const CLIENT_PREFIX = 'mcpc_';

/** A redirect URI a public client may use: https anywhere, http only on this machine (RFC 8252 loopback). */
function allowedRedirect(uri: string): boolean {
  try {
    const url = new URL(uri);
    if (url.hash) return false;
    if (url.protocol === 'https:') return true;
    return url.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
  } catch {
    return false;
  }
}

/**
 * Registered MCP clients without a table: the client id is the registration itself (name, redirect URIs,
 * time), signed with a key derived from the master key, so every API instance recognises it and none stores
 * it. Verified with the previous master keys too, so registrations survive a key rotation.
 */
@Injectable()
export class McpOAuthClients {
  private readonly keys: Buffer[];

  constructor(config: AppConfig) {
    const derive = (master: string) =>
      Buffer.from(
        hkdfSync(
          'sha256',
          Buffer.from(master, 'base64'),
          Buffer.alloc(0),
          'lockstep mcp oauth client v1',
          32,
        ),
      );
    this.keys = [config.LOCKSTEP_MASTER_KEY, ...(config.LOCKSTEP_MASTER_KEY_PREVIOUS ?? [])].map(derive);
  }

  register(metadata: Record<string, unknown>, now = Date.now()): McpOAuthClient {
    const uris = metadata['redirect_uris'];
    if (
      !Array.isArray(uris) ||
      uris.length === 0 ||
      uris.length > 10 ||
      !uris.every((u) => typeof u === 'string')
    )
      throw new OAuthError('invalid_redirect_uri', '`redirect_uris` must list 1 to 10 redirect URIs.');
    const bad = uris.find((uri) => !allowedRedirect(uri) || uri.length > 500);
    if (bad) {
      throw new OAuthError(
        'invalid_redirect_uri',
        `Redirect URI "${String(bad).slice(0, 100)}" is not allowed: use https, or http on 127.0.0.1 or localhost.`,
      );
    }
    const method = metadata['token_endpoint_auth_method'];
    if (method !== undefined && method !== 'none') {
      throw new OAuthError(
        'invalid_client_metadata',
        'Only public clients (`token_endpoint_auth_method` none) with PKCE.',
      );
    }
    const rawName = typeof metadata['client_name'] === 'string' ? metadata['client_name'].trim() : '';
    const name = (rawName || 'MCP client').slice(0, 80);
    const issuedAt = Math.floor(now / 1000);
    const payload = Buffer.from(JSON.stringify({ n: name, r: uris, t: issuedAt })).toString('base64url');
    return {
      client_id: `${CLIENT_PREFIX}${payload}.${this.sign(this.keys[0]!, payload)}`,
      client_name: name,
      redirect_uris: uris as string[],
      client_id_issued_at: issuedAt,
    };
  }

  /** The registration a client id stands for, or null when it is not one this install signed. */
  find(clientId: unknown): McpOAuthClient | null {
    if (typeof clientId !== 'string' || !clientId.startsWith(CLIENT_PREFIX) || clientId.length > 8000)
      return null;
    const [payload, signature] = clientId.slice(CLIENT_PREFIX.length).split('.');
    if (!payload || !signature) return null;
    const given = Buffer.from(signature);
    const valid = this.keys.some((key) => {
      const expected = Buffer.from(this.sign(key, payload));
      return expected.length === given.length && timingSafeEqual(expected, given);
    });
    if (!valid) return null;
    const parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as {
      n: string;
      r: string[];
      t: number;
    };
    return {
      client_id: clientId,
      client_name: parsed.n,
      redirect_uris: parsed.r,
      client_id_issued_at: parsed.t,
    };
  }

  private sign(key: Buffer, payload: string): string {
    return createHmac('sha256', key).update(payload).digest('base64url');
  }
}
