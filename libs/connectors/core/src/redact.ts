/**
 * Credentials never appear in logs or errors. Drivers sometimes echo a connection string, a URL with a
 * password in it, or the password itself; every message a connector builds from a driver error goes through
 * `redactSecrets()` first.
 *
 * Invariant: nothing here builds a regular expression from a secret or runs a backtracking pattern over the
 * text. Secrets are user input of any size; plain substring search and one linear scan per URL keep the cost
 * proportional to the text and the secrets, whatever they contain.
 */

const REDACTED = '***';

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
    result = result.split(variant).join(REDACTED);
  }
  return redactUrlPasswords(result);
}

const SCHEME_CHAR = /^[a-z0-9+.-]$/i;
const LETTER = /^[a-z]$/i;
const WHITESPACE = /^\s$/;

/** True when the characters right before `end` form a URL scheme (`[a-z][a-z0-9+.-]*`, as a suffix). */
function hasScheme(text: string, end: number): boolean {
  let letter = false;
  for (let i = end - 1; i >= 0 && SCHEME_CHAR.test(text[i]); i -= 1) letter ||= LETTER.test(text[i]);
  return letter;
}

/**
 * Index of the first character at or after `from` that is in `stops` or whitespace (`text.length` if none).
 */
function scanUntil(text: string, from: number, stops: string): number {
  let i = from;
  while (i < text.length && !stops.includes(text[i]) && !WHITESPACE.test(text[i])) i += 1;
  return i;
}

/** `scheme://user:password@` becomes `scheme://user:***@`, in one pass over the text. */
function redactUrlPasswords(text: string): string {
  const parts: string[] = [];
  let copied = 0;
  let marker = text.indexOf('://');
  while (marker !== -1) {
    let next = marker + 3;
    if (hasScheme(text, marker)) {
      const colon = scanUntil(text, marker + 3, ':/@');
      if (text[colon] === ':') {
        const at = scanUntil(text, colon + 1, '@/');
        if (text[at] === '@') {
          parts.push(text.slice(copied, colon + 1), REDACTED);
          copied = at;
          next = at + 1;
        }
      }
    }
    marker = text.indexOf('://', next);
  }
  parts.push(text.slice(copied));
  return parts.join('');
}

/** Every credential value of a side, to pass to `redactSecrets()`. */
export function credentialSecrets(credentials: Record<string, string | undefined>): string[] {
  return Object.values(credentials).filter(
    (value): value is string => typeof value === 'string' && value !== '',
  );
}
