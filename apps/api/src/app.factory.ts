import type { INestApplication, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'nestjs-pino';
import { AppConfig } from '@lockstep/config';
import { AppModule } from './app.module';
import { answerClientErrors } from './common/http/client-errors';
import { validationPipe } from './common/http/validation';
import { buildOpenApiDocument, OpenApiDocument } from './common/openapi/openapi';

/**
 * Creates and initialises the API application (used by main.ts and the e2e tests).
 *
 * No global prefix: the versioned controllers carry `v1/` in their own paths. A global prefix with exclusions
 * (health, discovery, the console...) makes Nest mount every global middleware once per excluded path and per
 * console route, hundreds of router layers that Express walks in front of the routes on every request.
 */
export async function createApp(config: AppConfig, extraModules: Type[] = []): Promise<INestApplication> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config, extraModules), {
    bodyParser: false,
    bufferLogs: true,
  });
  app.useLogger(app.get(Logger));
  app.disable('x-powered-by');
  app.set('etag', false); // ETag is the mappings revision (If-Match), set by those routes only
  app.set('trust proxy', true);
  app.useGlobalPipes(validationPipe);
  answerClientErrors(app.getHttpServer(), config);
  app.enableShutdownHooks();
  await app.init();
  app.get(OpenApiDocument).document = buildOpenApiDocument(app, config);
  return app;
}

/**
 * The API's modules and routes in Nest's preview mode: nothing is instantiated or connected (no store, no
 * Redis), enough to describe the API. Used to write the typed client's copy of the OpenAPI description.
 */
export async function createPreviewApp(config: AppConfig): Promise<INestApplication> {
  return NestFactory.create<NestExpressApplication>(AppModule.forRoot(config), {
    preview: true,
    logger: false,
  });
}
