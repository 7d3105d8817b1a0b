/** API keys (`api_keys`): created by a person or an operator, looked up by every authenticated request. */
import { type EntityManager, IsNull } from 'typeorm';
import { ApiKeyEntity } from '../../entities';

export class ApiKeyStore {
  /** `db`: the data source's manager, or a transaction's. */
  constructor(private readonly db: EntityManager) {}

  private get keys() {
    return this.db.getRepository(ApiKeyEntity);
  }

  /** Stores a new key; returns it as stored (with its creation time). */
  async insert(key: Omit<ApiKeyEntity, 'createdAt'>): Promise<ApiKeyEntity> {
    const entity = this.keys.create(key);
    await this.keys.insert(entity);
    return this.keys.findOneByOrFail({ id: entity.id });
  }

  /** The account's keys, newest first. */
  async list(accountId: string): Promise<ApiKeyEntity[]> {
    return this.keys.find({ where: { accountId }, order: { createdAt: 'DESC', id: 'DESC' } });
  }

  /** A key by id (of this account only, when given). */
  async find(keyId: string, accountId?: string): Promise<ApiKeyEntity | null> {
    return this.keys.findOne({ where: accountId ? { id: keyId, accountId } : { id: keyId } });
  }

  async get(keyId: string): Promise<ApiKeyEntity> {
    return this.keys.findOneByOrFail({ id: keyId });
  }

  /** Revokes the key now (a revoked key keeps its first revocation time). */
  async revoke(keyId: string): Promise<void> {
    await this.keys.update({ id: keyId, revokedAt: IsNull() }, { revokedAt: () => 'now()' });
  }

  /** The key a secret's lookup part names. */
  async findByLookup(lookup: string): Promise<ApiKeyEntity | null> {
    return this.keys.findOne({ where: { lookup } });
  }

  /** Marks `last_used_at` (at most every 10 seconds per key, whichever process served the key). */
  async markUsed(keyId: string): Promise<void> {
    await this.keys
      .createQueryBuilder()
      .update()
      .set({ lastUsedAt: () => 'now()' })
      .where("id = :id AND (last_used_at IS NULL OR last_used_at < now() - interval '10 seconds')", {
        id: keyId,
      })
      .execute();
  }
}
