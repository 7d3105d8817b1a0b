import type { INestApplication, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'nestjs-pino';
import { AppConfig } from '@lockstep/config';
import { AppModule } from './app.module';
import { answerClientErrors } from './common/http/client-errors';
import { validationPipe } from './common/http/validation';
import { buildOpenApiDocument, OpenApiDocument } from './common/openapi/openapi';

/** Paths outside `/v1`: health, metrics, discovery, error pages, the console and the MCP server. */
const UNVERSIONED = [
  'mcp',
  '.well-known/oauth-protected-resource',
  '.well-known/oauth-protected-resource/mcp',
  '.well-known/oauth-authorization-server',
  'oauth/register',
  'oauth/token',
  'healthz',
  'metrics',
  'hooks/{*path}',
  '/',
  'llms.txt',
  'docs/errors',
  'docs/errors/{*code}',
  'app',
  'app/{*path}',
];

/** Creates and initialises the API application (used by main.ts and the e2e tests). */
export async function createApp(config: AppConfig, extraModules: Type[] = []): Promise<INestApplication> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config, extraModules), {
    bodyParser: false,
    bufferLogs: true,
  });
  app.useLogger(app.get(Logger));
  app.disable('x-powered-by');
  app.set('etag', false); // ETag is the mappings revision (If-Match), set by those routes only
  app.set('trust proxy', true);
  app.setGlobalPrefix('v1', { exclude: UNVERSIONED });
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
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config), {
    preview: true,
    logger: false,
  });
  app.setGlobalPrefix('v1', { exclude: UNVERSIONED });
  return app;
}
