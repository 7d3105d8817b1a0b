import { timingSafeEqual } from 'node:crypto';
import { Body, Controller, Headers, HttpCode, Param, Post } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { AppConfig, hookKey } from '@lockstep/config';
import {
  coordinationPrefix,
  HOOK_SIGNATURE_HEADER,
  hookHints,
  hookSignalChannel,
  hookSignature,
  RedisSignals,
} from '@lockstep/connectors-http';
import { DomainError, ErrorCode } from '@lockstep/contracts';
import { Public } from '../common/auth/auth.decorators';
import { RedisClient } from '../common/redis/redis.module';

/** A NocoDB channel: the server's hash and a table id (`change-capture.ts` `channelOf`). */
const CHANNEL = /^[0-9a-f]{12}\.[A-Za-z0-9_-]{1,64}$/;

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * The notification endpoint apps' webhooks call (`POST /hooks/<app>/<channel>`, outside `/v1`): it checks the
 * channel's signature and only wakes the connections that read the channel (through the shared signals in
 * Redis, which the workers subscribe to). It never trusts the body's data: the keys of deleted records are
 * passed on as hints, which the feed checks against the app before it reports a delete.
 */
@ApiExcludeController()
@Public()
@Controller('hooks')
export class AppHooksController {
  private readonly signals: RedisSignals;
  private readonly nocodbKey: string | undefined;

  constructor(config: AppConfig, redis: RedisClient) {
    this.signals = new RedisSignals(redis.client, coordinationPrefix(config.QUEUE_PREFIX));
    this.nocodbKey = hookKey(config.LOCKSTEP_MASTER_KEY, 'nocodb');
  }

  @Post('nocodb/:channel')
  @HttpCode(204)
  async nocodb(
    @Param('channel') channel: string,
    @Headers(HOOK_SIGNATURE_HEADER) signature: string | undefined,
    @Body() body: unknown,
  ): Promise<void> {
    if (!CHANNEL.test(channel) || !this.nocodbKey) {
      throw new DomainError(ErrorCode.NotFound, 'No such notification channel');
    }
    if (!signature || !sameText(signature, hookSignature(this.nocodbKey, channel))) {
      throw new DomainError(ErrorCode.Forbidden, 'The notification is not signed for this channel');
    }
    await this.signals.publish(hookSignalChannel('nocodb', channel), hookHints(body));
  }
}
