import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { type DataSource, IsNull, type Repository } from 'typeorm';
import { AppConfig } from '@lockstep/config';
import { DomainError, ErrorCode, isScope, type Scope } from '@lockstep/contracts';
import { isId, newId } from '@lockstep/domain';
import { AccountEntity, type ApiKeyEntity, ApiKeyStore, SyncEntity } from '@lockstep/persistence';
import { generateKeySecret, hashKeySecret, parseKeySecret, secretMatches } from './api-key-secret';
import { type CachedKey, KeyCache } from './key-cache';
import { KeyGeneration } from './key-generation';

/** `last_used_at` is written at most this often per key. */
const LAST_USED_EVERY_MS = 10_000;

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
  private readonly keys: ApiKeyStore;

  constructor(
    @InjectDataSource() dataSource: DataSource,
    @InjectRepository(AccountEntity) private readonly accounts: Repository<AccountEntity>,
    @InjectRepository(SyncEntity) private readonly syncs: Repository<SyncEntity>,
    private readonly generation: KeyGeneration,
    config: AppConfig,
  ) {
    this.cache = new KeyCache(config.API_KEY_CACHE_SECONDS * 1000);
    this.keys = new ApiKeyStore(dataSource.manager);
  }

  private readonly cache: KeyCache;

  async create(
    accountId: string,
    input: { name: string; scope: string; syncId?: string | null },
  ): Promise<CreatedApiKey> {
    const name = input.name.trim();
    if (!name || name.length > 100)
      throw new DomainError(ErrorCode.InvalidRequest, 'A key needs a name of 1 to 100 characters.');
    if (!isScope(input.scope))
      throw new DomainError(
        ErrorCode.InvalidRequest,
        `Scope must be read, operate or readwrite, not "${input.scope}".`,
      );
    if (input.syncId != null && !isId('sync', input.syncId)) {
      throw new DomainError(ErrorCode.InvalidSync, `"${input.syncId}" is not a sync id.`);
    }
    if (!(await this.accounts.exist({ where: { id: accountId } })))
      throw new DomainError(ErrorCode.NotFound, `No account ${accountId}.`);
    if (
      input.syncId != null &&
      !(await this.syncs.exists({ where: { id: input.syncId, accountId, deletedAt: IsNull() } }))
    ) {
      throw new DomainError(ErrorCode.NotFound, `No sync ${input.syncId} on account ${accountId}.`);
    }
    const { secret, lookup, hash } = generateKeySecret();
    const saved = await this.keys.insert({
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
    return { ...toApiKeyView(saved), secret };
  }

  async list(accountId: string): Promise<ApiKeyView[]> {
    const keys = await this.keys.list(accountId);
    return keys.map(toApiKeyView);
  }

  /** Revokes at once: the next request with the key is `invalid_api_key`. Revoking twice is harmless. */
  async revoke(keyId: string, accountId?: string): Promise<ApiKeyView> {
    const key = await this.keys.find(keyId, accountId);
    if (!key) throw new DomainError(ErrorCode.NotFound, `No API key ${keyId}.`);
    await this.keys.revoke(key.id);
    await this.generation.bump();
    return toApiKeyView(await this.keys.get(key.id));
  }

  /**
   * The key and its account for a presented secret, or null when it is unknown, malformed or revoked (the
   * caller answers all three identically). From this process's cache when `generation` (the current key
   * generation, read by the caller in the rate limit's round trip; null when not known) is the one the entry
   * was verified under; from the store otherwise.
   */
  async authenticate(secret: string, generation: string | null = null): Promise<AuthenticatedKey | null> {
    const hash = hashKeySecret(secret).toString('hex');
    const cached = this.cache.get(hash);
    if (cached && generation !== null && cached.generation === generation) {
      await this.touch(cached);
      return { key: cached.key, account: cached.account };
    }
    return this.verify(secret, hash);
  }

  /** The id of a key this process verified for the secret: the caller counts the request against it first. */
  cachedKeyId(secret: string): string | null {
    return this.cache.get(hashKeySecret(secret).toString('hex'))?.key.id ?? null;
  }

  /** Asks the store; caches what it verified, tagged with the generation read before the store was. */
  private async verify(secret: string, hash: string): Promise<AuthenticatedKey | null> {
    const lookup = parseKeySecret(secret);
    const generation = lookup ? await this.generation.current() : null;
    const key = lookup ? await this.keys.findByLookup(lookup) : null;
    const matches = secretMatches(secret, key?.secretHash ?? null);
    const account =
      key && matches && !key.revokedAt ? await this.accounts.findOne({ where: { id: key.accountId } }) : null;
    if (!key || !account) {
      this.cache.delete(hash);
      return null;
    }
    await this.keys.markUsed(key.id);
    if (generation !== null) this.cache.set(hash, { key, account, generation });
    return { key, account };
  }

  private async touch(cached: CachedKey): Promise<void> {
    const now = Date.now();
    if (now - cached.touchedAt < LAST_USED_EVERY_MS) return;
    cached.touchedAt = now;
    await this.keys.markUsed(cached.key.id);
  }
}
