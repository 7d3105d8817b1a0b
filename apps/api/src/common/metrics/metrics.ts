import { Controller, Get, Header, Injectable, type NestMiddleware } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { NextFunction, Request, Response } from 'express';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { JobProducer } from '@lockstep/jobs';
import { Public } from '../auth/auth.decorators';

/** Prometheus metrics of one process: requests and latency per route, queue depths, process figures. */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'lockstep_http_requests_total',
    help: 'HTTP requests',
    labelNames: ['method', 'route', 'status'],
    registers: [this.registry],
  });
  readonly latency = new Histogram({
    name: 'lockstep_http_request_duration_seconds',
    help: 'HTTP request latency',
    labelNames: ['method', 'route'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });

  constructor(jobs: JobProducer) {
    collectDefaultMetrics({ register: this.registry, prefix: 'lockstep_' });
    new Gauge({
      name: 'lockstep_queue_jobs',
      help: 'Jobs per queue and state',
      labelNames: ['queue', 'state'],
      registers: [this.registry],
      async collect() {
        const depths = await jobs.depths().catch(() => ({}) as Record<string, Record<string, number>>);
        this.reset();
        for (const [queue, states] of Object.entries(depths))
          for (const [state, n] of Object.entries(states)) this.set({ queue, state }, n);
      },
    });
  }
}

/** Times every request; the route label is the matched route pattern, never a concrete id. */
@Injectable()
export class HttpMetricsMiddleware implements NestMiddleware {
  constructor(private readonly metrics: MetricsService) {}

  use(request: Request, response: Response, next: NextFunction): void {
    const stop = this.metrics.latency.startTimer();
    response.on('finish', () => {
      const routePath = (request.route as { path?: string } | undefined)?.path;
      const route = routePath ? `${request.baseUrl}${routePath}` : 'unmatched';
      stop({ method: request.method, route });
      this.metrics.requests.inc({ method: request.method, route, status: String(response.statusCode) });
    });
    next();
  }
}

@ApiExcludeController()
@Public()
@Controller()
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get('metrics')
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  async scrape(): Promise<string> {
    return this.metrics.registry.metrics();
  }
}
