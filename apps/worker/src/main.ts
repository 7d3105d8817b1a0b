import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { Logger } from 'nestjs-pino';
import { loadConfig } from '@lockstep/config';
import { checkJobHandlers } from './job-handlers';
import { WorkerModule } from './worker.module';

async function main(): Promise<void> {
  const config = loadConfig();
  const app = await NestFactory.createApplicationContext(WorkerModule.forRoot(config), { bufferLogs: true });
  app.useLogger(app.get(Logger));
  app.enableShutdownHooks();
  // Every queued job name has exactly one handler, or the worker does not start (the message names the gap).
  checkJobHandlers(app);
  app.get(Logger).log('worker started');
}

main().catch((error: unknown) => {
  process.stderr.write(
    `lockstep worker failed to start: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
