import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, type Repository } from 'typeorm';
import { DomainError, ErrorCode, isScope, type Scope } from '@lockstep/contracts';
import { isId, newId } from '@lockstep/domain';
import { AccountEntity, ApiKeyEntity, SyncEntity } from '@lockstep/persistence';
import { generateKeySecret, parseKeySecret, secretMatches } from './api-key-secret';

export interface ApiKeyView {
  id: string;
  account_id: string;
  name: string;
  scope: Scope;
  sync_id: string | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface CreatedApiKey extends ApiKeyView {
  /** Shown once, never stored. */
  secret: string;
}

export interface AuthenticatedKey {
  key: ApiKeyEntity;
  account: AccountEntity;
}

export function toApiKeyView(key: ApiKeyEntity): ApiKeyView {
  return {
    id: key.id,
    account_id: key.accountId,
    name: key.name,
    scope: key.scope,
    sync_id: key.syncId,
    created_at: key.createdAt.toISOString(),
    last_used_at: key.lastUsedAt?.toISOString() ?? null,
    revoked_at: key.revokedAt?.toISOString() ?? null,
  };
}

/** API keys: created only by a person (console) or an operator (CLI), never through the REST API. */
@Injectable()
export class ApiKeysService {
  constructor(
    @InjectRepository(ApiKeyEntity) private readonly keys: Repository<ApiKeyEntity>,
    @InjectRepository(AccountEntity) private readonly accounts: Repository<AccountEntity>,
    @InjectRepository(SyncEntity) private readonly syncs: Repository<SyncEntity>,
  ) {}

  async create(accountId: string, input: { name: string; scope: string; syncId?: string | null }): Promise<CreatedApiKey> {
    const name = input.name.trim();
    if (!name || name.length > 100) throw new DomainError(ErrorCode.InvalidRequest, 'A key needs a name of 1 to 100 characters.');
    if (!isScope(input.scope)) throw new DomainError(ErrorCode.InvalidRequest, `Scope must be read, operate or readwrite, not "${input.scope}".`);
    if (input.syncId != null && !isId('sync', input.syncId)) {
      throw new DomainError(ErrorCode.InvalidSync, `"${input.syncId}" is not a sync id.`);
    }
    if (!(await this.accounts.exist({ where: { id: accountId } }))) throw new DomainError(ErrorCode.NotFound, `No account ${accountId}.`);
    if (input.syncId != null && !(await this.syncs.exists({ where: { id: input.syncId, accountId, deletedAt: IsNull() } }))) {
      throw new DomainError(ErrorCode.NotFound, `No sync ${input.syncId} on account ${accountId}.`);
    }
    const { secret, lookup, hash } = generateKeySecret();
    const entity = this.keys.create({
      id: newId('apiKey'),
      accountId,
      name,
      scope: input.scope,
      syncId: input.syncId ?? null,
      lookup,
      secretHash: hash,
      lastUsedAt: null,
      revokedAt: null,
    });
    await this.keys.insert(entity);
    const saved = await this.keys.findOneByOrFail({ id: entity.id });
    return { ...toApiKeyView(saved), secret };
  }

  async list(accountId: string): Promise<ApiKeyView[]> {
    const keys = await this.keys.find({ where: { accountId }, order: { createdAt: 'DESC', id: 'DESC' } });
    return keys.map(toApiKeyView);
  }

  /** Revokes at once: the next request with the key is `invalid_api_key`. Revoking twice is harmless. */
  async revoke(keyId: string, accountId?: string): Promise<ApiKeyView> {
    const key = await this.keys.findOne({ where: accountId ? { id: keyId, accountId } : { id: keyId } });
    if (!key) throw new DomainError(ErrorCode.NotFound, `No API key ${keyId}.`);
    await this.keys.update({ id: key.id, revokedAt: IsNull() }, { revokedAt: () => 'now()' });
    return toApiKeyView(await this.keys.findOneByOrFail({ id: key.id }));
  }

  /**
   * The key and its account for a presented secret, or null when it is unknown, malformed or revoked (the
   * caller answers all three identically). Marks `last_used_at` (at most every 10 seconds per key).
   */
  async authenticate(secret: string): Promise<AuthenticatedKey | null> {
    const lookup = parseKeySecret(secret);
    const key = lookup ? await this.keys.findOne({ where: { lookup } }) : null;
    const matches = secretMatches(secret, key?.secretHash ?? null);
    if (!key || !matches || key.revokedAt) return null;
    const account = await this.accounts.findOne({ where: { id: key.accountId } });
    if (!account) return null;
    await this.keys
      .createQueryBuilder()
      .update()
      .set({ lastUsedAt: () => 'now()' })
      .where('id = :id AND (last_used_at IS NULL OR last_used_at < now() - interval \'10 seconds\')', { id: key.id })
      .execute();
    return { key, account };
  }
}
