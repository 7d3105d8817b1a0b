/** API key scopes, weakest to strongest; each includes the weaker ones (spec section 5). */
export const SCOPES = ['read', 'operate', 'readwrite'] as const;
export type Scope = (typeof SCOPES)[number];

export function scopeAllows(have: Scope, need: Scope): boolean {
  return SCOPES.indexOf(have) >= SCOPES.indexOf(need);
}

export function isScope(value: unknown): value is Scope {
  return typeof value === 'string' && (SCOPES as readonly string[]).includes(value);
}
