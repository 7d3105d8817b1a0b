import { Global, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { ApiAuthenticator, ApiAuthGuard } from './auth/api-auth.guard';
import { RateLimitService } from './auth/rate-limit.service';
import { ErrorFilter } from './errors/error.filter';
import { IdempotencyInterceptor } from './idempotency/idempotency.interceptor';
import { HttpMetricsMiddleware, MetricsController, MetricsService } from './metrics/metrics';
import { OpenApiController, OpenApiDocument } from './openapi/openapi';
import { CursorService } from './pagination/cursor.service';
import { RedisModule } from './redis/redis.module';

/** What every resource module shares: auth, errors, rate limit, idempotency, cursors, metrics, OpenAPI. */
@Global()
@Module({
  imports: [RedisModule, ApiKeysModule],
  controllers: [MetricsController, OpenApiController],
  providers: [
    ApiAuthenticator,
    RateLimitService,
    CursorService,
    IdempotencyInterceptor,
    MetricsService,
    HttpMetricsMiddleware,
    OpenApiDocument,
    { provide: APP_GUARD, useClass: ApiAuthGuard },
    { provide: APP_FILTER, useClass: ErrorFilter },
  ],
  exports: [
    ApiAuthenticator,
    RateLimitService,
    CursorService,
    IdempotencyInterceptor,
    MetricsService,
    HttpMetricsMiddleware,
    OpenApiDocument,
    RedisModule,
  ],
})
export class CommonModule {}
