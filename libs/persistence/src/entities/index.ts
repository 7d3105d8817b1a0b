import { AccountEntity } from './account.entity';
import { ApiKeyEntity } from './api-key.entity';
import { IdempotencyRecordEntity } from './idempotency-record.entity';

export { AccountEntity, ApiKeyEntity, IdempotencyRecordEntity };

/** Every entity of the service store (TypeORM needs the list). */
export const ENTITIES = [AccountEntity, ApiKeyEntity, IdempotencyRecordEntity];
