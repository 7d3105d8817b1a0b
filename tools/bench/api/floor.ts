/**
 * The framework's floor for the API load benchmark (`run.ts` starts it as its own process): one NestJS
 * application on Express, the API's own framework and adapter, with a single `GET /floor` answering a small
 * JSON document. No store, no Redis, no middleware, no logging. No route of the API can be faster than this
 * on the same machine, so the benchmark prints it next to `/healthz` to show how much of a read's time is the
 * framework's and how much is Lockstep's. Listens on `$PORT` (127.0.0.1) and prints `ready` once it does.
 */
import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';

@Controller('floor')
class FloorController {
  @Get()
  floor(): { status: string } {
    return { status: 'ok' };
  }
}

@Module({ controllers: [FloorController] })
class FloorModule {}

async function main(): Promise<void> {
  const app = await NestFactory.create<NestExpressApplication>(FloorModule, {
    logger: false,
    bodyParser: false,
  });
  app.disable('x-powered-by');
  app.set('etag', false);
  await app.listen(Number(process.env['PORT']), '127.0.0.1');
  process.stdout.write('ready\n');
}

void main();
