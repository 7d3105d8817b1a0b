import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import { AppConfig } from '@lockstep/config';
import { DomainError, ErrorCode, scopeAllows, type Scope } from '@lockstep/contracts';
import { ApiKeysService, type AuthenticatedKey } from '../../api-keys/api-keys.service';
import type { AuthContext } from './auth-context';
import {
  NOT_FOR_SYNC_RESTRICTED,
  PUBLIC_ROUTE,
  REQUIRED_SCOPE,
  REQUIRES_SUBSCRIPTION,
} from './auth.decorators';
import { apiKeyAction } from './required-action';
import { type Consumed, RateLimitService, type RateLimitState } from './rate-limit.service';

/** The scope an endpoint needs when it does not say: reads and `POST .../validate` need `read`. */
export function defaultScope(method: string, path: string): Scope {
  if (method === 'GET' || method === 'HEAD') return 'read';
  if (method === 'POST' && /\/validate$/.test(path)) return 'read';
  return 'readwrite';
}

/** What one endpoint asks of a key beyond being valid: its decorators (`auth.decorators.ts`). */
export interface EndpointRequirement {
  scope: Scope;
  notForSyncRestricted: boolean;
  requiresSubscription: boolean;
}

/** The requirement an endpoint's decorators state (handler, then class); `scope` falls back to `defaultScope`. */
export function endpointRequirement(
  reflector: Reflector,
  targetsOf: Parameters<Reflector['getAllAndOverride']>[1],
  method: string,
  path: string,
): EndpointRequirement {
  return {
    scope: reflector.getAllAndOverride<Scope>(REQUIRED_SCOPE, targetsOf) ?? defaultScope(method, path),
    notForSyncRestricted: reflector.getAllAndOverride<boolean>(NOT_FOR_SYNC_RESTRICTED, targetsOf) === true,
    requiresSubscription: reflector.getAllAndOverride<boolean>(REQUIRES_SUBSCRIPTION, targetsOf) === true,
  };
}

/**
 * The endpoint checks of spec section 5 after the key is admitted, in this order: scope (403), one-sync key
 * limits (403), subscription (403). Answers who is calling.
 */
export function authorize(admitted: AuthenticatedKey, needs: EndpointRequirement): AuthContext {
  const { key, account } = admitted;
  if (!scopeAllows(key.scope, needs.scope)) {
    throw new DomainError(
      ErrorCode.InsufficientScope,
      `This endpoint needs the "${needs.scope}" scope; the key has "${key.scope}".`,
      {
        required_scope: needs.scope,
        key_scope: key.scope,
      },
    );
  }
  if (key.syncId && needs.notForSyncRestricted) {
    throw new DomainError(
      ErrorCode.SyncRestrictedKey,
      `This key is limited to sync ${key.syncId} and cannot be used on endpoints that are not about one existing sync.`,
    );
  }
  if (account.subscription !== 'active' && needs.requiresSubscription) {
    throw new DomainError(
      ErrorCode.SubscriptionRequired,
      'The account has no subscription permitting creating or changing syncs.',
    );
  }
  return {
    accountId: account.id,
    keyId: key.id,
    scope: key.scope,
    syncId: key.syncId,
    plan: account.plan,
  };
}

/** The budget's headers on every answer; a key over its budget is refused (429 with `Retry-After`). */
function applyBudget(budget: RateLimitState, response: Response): void {
  for (const [name, value] of Object.entries(RateLimitService.headers(budget)))
    response.setHeader(name, value);
  if (budget.exceeded) {
    throw new DomainError(
      ErrorCode.RateLimitExceeded,
      `Rate limit of ${budget.limit} requests per ${budget.window} seconds exceeded for this key; ` +
        `retry in ${budget.reset} seconds.`,
      undefined,
      undefined,
      { 'Retry-After': String(budget.reset) },
    );
  }
}

/**
 * Admits the bearer key of a request, in this order: bearer key (401), rate limit (429, every admitted request
 * counts against its key's budget), account admitted to the API (403). Shared by the REST guard and the MCP
 * endpoint, so both answer and count alike.
 */
@Injectable()
export class ApiAuthenticator {
  constructor(
    private readonly config: AppConfig,
    private readonly keys: ApiKeysService,
    private readonly rateLimit: RateLimitService,
  ) {}

  /** `needed` is named by the 401's `required_action` (the smallest scope a new key needs). */
  async authenticate(request: Request, response: Response, needed: Scope): Promise<AuthenticatedKey> {
    const header = request.headers.authorization;
    if (header === undefined || header.trim() === '') {
      throw new DomainError(
        ErrorCode.MissingApiKey,
        'Send an API key as `Authorization: Bearer <API_KEY>`.',
        undefined,
        apiKeyAction(this.config.publicUrl, needed),
      );
    }
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    const admitted = match ? await this.admit(match[1]) : null;
    if (!admitted) {
      throw new DomainError(
        ErrorCode.InvalidApiKey,
        'The API key is not valid: it is unknown, malformed or revoked.',
        undefined,
        apiKeyAction(this.config.publicUrl, needed),
      );
    }
    const budget = admitted.consumed?.state;
    if (budget) applyBudget(budget, response);
    if (!admitted.found.account.apiEnabled) {
      throw new DomainError(ErrorCode.PublicApiNotEnabled, 'This account is not yet admitted to the API.');
    }
    return admitted.found;
  }

  /**
   * The key and the request counted against its budget. A key this process verified before is counted first:
   * that round trip also reads the key generation, which decides whether the cached verification still holds,
   * so a cached key costs one Redis round trip and no store query. A refused key is 401 whatever its budget.
   */
  private async admit(
    secret: string,
  ): Promise<{ found: AuthenticatedKey; consumed: Consumed | null } | null> {
    const cachedId = this.keys.cachedKeyId(secret);
    const early = cachedId ? await this.rateLimit.consume(cachedId) : null;
    const found = await this.keys.authenticate(secret, early?.generation ?? null);
    if (!found) return null;
    return {
      found,
      consumed: early && found.key.id === cachedId ? early : await this.rateLimit.consume(found.key.id),
    };
  }
}

/** Authentication and authorization of spec section 5 for every REST endpoint not marked `@Public()`. */
@Injectable()
export class ApiAuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly authenticator: ApiAuthenticator,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, targets)) return true;
    const request = context.switchToHttp().getRequest<Request>();
    const response = context.switchToHttp().getResponse<Response>();
    const needs = endpointRequirement(this.reflector, targets, request.method, request.path);
    const admitted = await this.authenticator.authenticate(request, response, needs.scope);
    request.auth = authorize(admitted, needs);
    return true;
  }
}
