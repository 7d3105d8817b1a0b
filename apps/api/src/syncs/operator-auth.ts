import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, type Repository } from 'typeorm';
import { DomainError, ErrorCode } from '@lockstep/contracts';
import { AccountEntity, SyncEntity } from '@lockstep/persistence';
import type { AuthContext } from '../common/auth/auth-context';

/**
 * The caller context of a person acting on a sync outside the REST API (the console, the operator CLI):
 * the sync's owner with every scope. The services then apply the same rules as for an API key.
 */
@Injectable()
export class OperatorAuth {
  constructor(
    @InjectRepository(SyncEntity) private readonly syncs: Repository<SyncEntity>,
    @InjectRepository(AccountEntity) private readonly accounts: Repository<AccountEntity>,
  ) {}

  async forSync(syncId: string): Promise<AuthContext> {
    const sync = await this.syncs.findOneBy({ id: syncId, deletedAt: IsNull() });
    if (!sync) throw new DomainError(ErrorCode.NotFound, `No sync ${syncId}.`);
    const account = await this.accounts.findOneByOrFail({ id: sync.accountId });
    return { accountId: account.id, keyId: 'operator', scope: 'readwrite', syncId: null, plan: account.plan };
  }

  async exists(syncId: string, accountId: string): Promise<boolean> {
    return this.syncs.exists({ where: { id: syncId, accountId, deletedAt: IsNull() } });
  }
}
