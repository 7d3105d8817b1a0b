/**
 * Paging through an app's lists in its own style: an offset token (Airtable's `offset`), a cursor (Notion's
 * `start_cursor` / `next_cursor`), or a page number. Each helper yields one page at a time, so a list is
 * never held whole in memory, and stops with a `transient` error when the app hands back a token it already
 * gave (a loop would otherwise never end).
 */
import { ConnectorError } from '@lockstep/connectors-core';

export interface Page<T, C> {
  items: T[];
  /** The token of the next page; null (or absent) on the last page. */
  next?: C | null;
}

/**
 * Pages from `fetch(token)`, starting with `start` (null: the first page), until a page has no `next`.
 * Works for offset tokens and cursors alike (both are opaque tokens the app returns).
 */
export async function* paginate<T, C = string>(
  fetch: (token: C | null) => Promise<Page<T, C>>,
  start: C | null = null,
): AsyncGenerator<T[], void, undefined> {
  const seen = new Set<string>();
  let token = start;
  for (;;) {
    const page = await fetch(token);
    yield page.items;
    const next = page.next ?? null;
    if (next === null) return;
    const key = JSON.stringify(next);
    if (seen.has(key))
      throw new ConnectorError('transient', `The app returned the page token ${key.slice(0, 40)} twice`);
    seen.add(key);
    token = next;
  }
}

/**
 * Numbered pages (1, 2, 3...) of `pageSize` items: the last page is the first with fewer items, or the page
 * `hasMore(page)` says is last, when the app says it.
 */
export async function* paginateByNumber<T>(
  fetch: (pageNumber: number) => Promise<{ items: T[]; hasMore?: boolean }>,
  options: { pageSize: number; first?: number },
): AsyncGenerator<T[], void, undefined> {
  for (let number = options.first ?? 1; ; number += 1) {
    const page = await fetch(number);
    if (page.items.length > 0) yield page.items;
    const more = page.hasMore ?? page.items.length >= options.pageSize;
    if (!more || page.items.length === 0) return;
  }
}

/** Every item of every page, for lists that are small by nature (bases, tables); stops past `max`. */
export async function collectAll<T>(pages: AsyncIterable<T[]>, max = 100_000): Promise<T[]> {
  const items: T[] = [];
  for await (const page of pages) {
    items.push(...page);
    if (items.length > max) throw new ConnectorError('unsupported', `The list has more than ${max} entries`);
  }
  return items;
}
