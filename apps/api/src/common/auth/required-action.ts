import type { PendingAction, Scope } from '@lockstep/contracts';

/** The `user_api_key` action of a 401: a person creates a key in the console with at least `scope`. */
export function apiKeyAction(publicUrl: string, scope: Scope): PendingAction {
  return {
    type: 'user_api_key',
    audience: 'end_user',
    action: 'open_in_browser',
    side: null,
    url: `${publicUrl}/app/settings/api-keys?scope=${scope}`,
    instruction:
      `Ask a person to sign in to Lockstep, open Settings > API keys, create a key with at least the ` +
      `"${scope}" scope, and give you its secret.`,
  };
}
