/**
 * Credentials never appear in logs or errors. Drivers sometimes echo a connection string, a URL with a
 * password in it, or the password itself; every message a connector builds from a driver error goes through
 * `redactSecrets()` first.
 */

const REDACTED = '***';

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Replaces every occurrence of each secret (as given and URL-encoded) with `***`, and the password part of
 * any `scheme://user:password@host` URL. Empty and missing secrets are ignored.
 */
export function redactSecrets(text: string, secrets: Iterable<string | null | undefined> = []): string {
  let result = text;
  const variants = new Set<string>();
  for (const secret of secrets) {
    if (!secret) continue;
    variants.add(secret);
    variants.add(encodeURIComponent(secret));
  }
  // Longest first, so a secret containing another is replaced whole.
  for (const variant of [...variants].sort((a, b) => b.length - a.length)) {
    result = result.replace(new RegExp(escapeRegExp(variant), 'g'), REDACTED);
  }
  return result.replace(/([a-z][a-z0-9+.-]*:\/\/[^:/@\s]*):[^@\s/]*@/gi, `$1:${REDACTED}@`);
}

/** Every credential value of a side, to pass to `redactSecrets()`. */
export function credentialSecrets(credentials: Record<string, string | undefined>): string[] {
  return Object.values(credentials).filter((value): value is string => typeof value === 'string' && value !== '');
}
