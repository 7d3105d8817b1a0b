import { Controller, Get, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Response } from 'express';
import type { DataSource } from 'typeorm';
import { Public } from '../common/auth/auth.decorators';
import { RedisClient } from '../common/redis/redis.module';

async function check(probe: () => Promise<unknown>, timeoutMs = 2000): Promise<'ok' | 'unavailable'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([probe(), new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), timeoutMs)))]);
    return 'ok';
  } catch {
    return 'unavailable';
  } finally {
    clearTimeout(timer);
  }
}

/** `GET /healthz`: 200 once the service store and Redis answer, 503 otherwise. */
@ApiExcludeController()
@Public()
@Controller('healthz')
export class HealthController {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly redis: RedisClient,
  ) {}

  @Get()
  async health(@Res() response: Response): Promise<void> {
    const [database, redis] = await Promise.all([check(() => this.dataSource.query('SELECT 1')), check(() => this.redis.client.ping())]);
    const ok = database === 'ok' && redis === 'ok';
    response.status(ok ? 200 : 503).json({ status: ok ? 'ok' : 'unavailable', checks: { database, redis } });
  }
}
