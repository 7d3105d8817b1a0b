import { SetMetadata } from '@nestjs/common';
import type { Scope } from '@lockstep/contracts';

export const PUBLIC_ROUTE = 'lockstep:public';
export const REQUIRED_SCOPE = 'lockstep:scope';
export const NOT_FOR_SYNC_RESTRICTED = 'lockstep:not-for-sync-restricted';
export const REQUIRES_SUBSCRIPTION = 'lockstep:requires-subscription';

/** No API key needed (health, metrics, discovery, the OpenAPI document, the console). */
export const Public = () => SetMetadata(PUBLIC_ROUTE, true);

/**
 * The smallest scope the endpoint needs. Without it: GET (and `POST .../validate`) need `read`, everything
 * else `readwrite`; operate endpoints say `@RequiredScope('operate')`.
 */
export const RequiredScope = (scope: Scope) => SetMetadata(REQUIRED_SCOPE, scope);

/**
 * Endpoints not about one existing sync (`POST /sync/syncs`, every live export endpoint): 403 for one-sync
 * keys.
 */
export const NotForSyncRestrictedKeys = () => SetMetadata(NOT_FOR_SYNC_RESTRICTED, true);

/** Endpoints that create or change syncs: 403 `subscription_required` without a subscription. */
export const RequiresSubscription = () => SetMetadata(REQUIRES_SUBSCRIPTION, true);
