export {
  createLockstepClient,
  type LockstepClient,
  type LockstepClientOptions,
  type LockstepMethod,
  type LockstepResult,
  type PageItem,
  type PaginatedPath,
  type WriteOptions,
} from './client';
export {
  type ApiError,
  type ErrorCode,
  type ErrorResponse,
  type ErrorType,
  LockstepApiError,
  type PendingAction,
} from './errors';
export type { components, operations, paths } from './generated/schema';
