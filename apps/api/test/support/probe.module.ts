import { Body, Controller, Get, HttpCode, Module, Post, Query } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { DomainError, ErrorCode } from '@lockstep/contracts';
import { newId } from '@lockstep/domain';
import { ApiKeyEntity } from '@lockstep/persistence';
import { Auth, type AuthContext } from '../../src/common/auth/auth-context';
import {
  NotForSyncRestrictedKeys,
  RequiredScope,
  RequiresSubscription,
} from '../../src/common/auth/auth.decorators';
import { Idempotent } from '../../src/common/idempotency/idempotency.interceptor';
import { CursorService, parseLimit } from '../../src/common/pagination/cursor.service';

/**
 * Test-only endpoints that exercise the shared mechanisms (scopes, one-sync keys, subscription, idempotency,
 * cursors, unexpected errors) before the resource endpoints that use them exist. Mounted only by the tests.
 */
@Controller('v1/test-probe')
class ProbeController {
  private calls = 0;

  constructor(
    private readonly cursors: CursorService,
    @InjectRepository(ApiKeyEntity) private readonly keys: Repository<ApiKeyEntity>,
  ) {}

  @Get('read')
  read(@Auth() auth: AuthContext) {
    return { ok: true, account_id: auth.accountId, sync_id: auth.syncId };
  }

  @Post('operate')
  @HttpCode(202)
  @RequiredScope('operate')
  operate() {
    return { ok: true };
  }

  @Post('validate')
  @HttpCode(200)
  validate() {
    return { issues: [] };
  }

  @Post('write')
  @Idempotent()
  @RequiresSubscription()
  @NotForSyncRestrictedKeys()
  async write(@Body() body: Record<string, unknown> | undefined) {
    if (typeof body?.delay_ms === 'number') await new Promise((r) => setTimeout(r, body.delay_ms as number));
    if (body?.fail === true) throw new DomainError(ErrorCode.Conflict, 'asked to fail');
    this.calls += 1;
    return { id: newId('sync'), call: this.calls, received: body ?? null };
  }

  @Get('boom')
  boom(): never {
    throw new Error('database password=hunter2 leaked?');
  }

  /** The account's API keys, newest first, with the real cursor helpers. */
  @Get('keys')
  async listKeys(
    @Auth() auth: AuthContext,
    @Query('limit') limit?: string,
    @Query('cursor') cursor?: string,
  ) {
    return this.page('GET /v1/test-probe/keys', auth, limit, cursor);
  }

  @Get('other-keys')
  async otherKeys(
    @Auth() auth: AuthContext,
    @Query('limit') limit?: string,
    @Query('cursor') cursor?: string,
  ) {
    return this.page('GET /v1/test-probe/other-keys', auth, limit, cursor);
  }

  private async page(endpoint: string, auth: AuthContext, rawLimit?: string, rawCursor?: string) {
    const limit = parseLimit(rawLimit, { min: 1, max: 100, default: 20 });
    const after = this.cursors.decode(rawCursor, endpoint, auth.accountId);
    const query = this.keys
      .createQueryBuilder('k')
      .where('k.account_id = :account', { account: auth.accountId })
      .orderBy('k.created_at', 'DESC')
      .addOrderBy('k.id', 'DESC')
      .limit(limit + 1);
    if (after) query.andWhere('(k.created_at, k.id) < (:at, :id)', { at: after.createdAt, id: after.id });
    const rows = await query.getMany();
    return this.cursors.page(
      rows,
      limit,
      endpoint,
      auth.accountId,
      (k) => ({ createdAt: k.createdAt.toISOString(), id: k.id }),
      (k) => ({ id: k.id, name: k.name }),
    );
  }
}

@Module({ controllers: [ProbeController] })
export class ProbeModule {}
