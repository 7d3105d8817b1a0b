/**
 * Query parameters of the monitoring, records and pending-deletes endpoints (spec 7.2): each has its own
 * precise code. A parameter given twice (`?sync=a&sync=b`) arrives as an array and is refused like a
 * malformed value.
 */
import { DomainError, ErrorCode } from '@lockstep/contracts';
import { isId } from '@lockstep/domain';
import type { SideName } from '@lockstep/persistence';

function single(raw: unknown): string | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'string') return '\u0000';
  return raw;
}

/** `sync` (required): `missing_sync` when absent or empty, `invalid_sync` when not a `sync_` id. */
export function requireSyncParam(raw: unknown): string {
  const value = single(raw);
  if (value === undefined || value === '')
    throw new DomainError(
      ErrorCode.MissingSync,
      'The `sync` query parameter is required here (a `sync_...` id).',
    );
  if (!isId('sync', value))
    throw new DomainError(
      ErrorCode.InvalidSync,
      `\`sync\` must be a sync id (\`sync_...\`), not "${String(value).slice(0, 100)}".`,
    );
  return value;
}

/** Optional `table`: a non-empty text (a `table_` id or a table's remote id; the caller resolves it). */
export function tableParam(raw: unknown): string | undefined {
  const value = single(raw);
  if (value === undefined) return undefined;
  if (value === '' || value.includes('\u0000') || value.length > 1024)
    throw new DomainError(
      ErrorCode.InvalidTable,
      "`table` must be a table id (`table_...`) or a table's remote id.",
    );
  return value;
}

/** Optional side (`left`/`right`): `invalid_side` otherwise. */
export function sideParam(raw: unknown, name = 'side'): SideName | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (raw !== 'left' && raw !== 'right')
    throw new DomainError(ErrorCode.InvalidSide, `\`${name}\` must be \`left\` or \`right\`.`);
  return raw;
}

const ISO_8601 = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i;

/** Optional `since` (ISO 8601 date or date-time; a time without a zone is UTC): `invalid_since` otherwise. */
export function sinceParam(raw: unknown): Date | undefined {
  const value = single(raw);
  if (value === undefined) return undefined;
  const invalid = () =>
    new DomainError(
      ErrorCode.InvalidSince,
      '`since` must be an ISO 8601 time, for example `2026-01-31T12:00:00Z`.',
    );
  if (!ISO_8601.test(value)) throw invalid();
  const zoned =
    /T|\s/.test(value) && !/(Z|[+-]\d{2}:?\d{2})$/i.test(value)
      ? `${value.replace(' ', 'T')}Z`
      : value.replace(' ', 'T');
  const date = new Date(zoned);
  if (Number.isNaN(date.getTime())) throw invalid();
  return date;
}

/** An optional parameter restricted to a fixed set of values, refused with `code`. */
export function enumParam<T extends string>(
  raw: unknown,
  allowed: readonly T[],
  code: ErrorCode,
  name: string,
): T | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'string' || !(allowed as readonly string[]).includes(raw)) {
    throw new DomainError(
      code,
      `\`${name}\` must be one of ${allowed.map((value) => `\`${value}\``).join(', ')}.`,
      { allowed },
    );
  }
  return raw as T;
}
