/** Write outcomes that are not a record's fault: the caller retries the whole round. */
import type { SideName } from '@lockstep/domain';

/**
 * A write outcome that is not the record's fault (auth, transient, rate limit): the caller retries the whole
 * round.
 */
export function retryableWriteError(
  error: { message: string; kind: string },
  side: SideName,
): Error & { connectorKind: string; side: SideName } {
  return Object.assign(new Error(error.message), { connectorKind: error.kind, side });
}

export function isRetryableWriteError(
  error: unknown,
): error is Error & { connectorKind: string; side: SideName } {
  return error instanceof Error && 'connectorKind' in error;
}
