import { loadConfig } from '@lockstep/config';
import { createPreviewApp } from '../../app.factory';
import { buildOpenApiDocument } from './openapi';

/** The command that rewrites the typed client's generated files (generate-client.ts). */
export const CLIENT_GENERATE_COMMAND = 'npm run client:generate';

/** The typed client's generated files, relative to the repository root. */
export const CLIENT_FILES = {
  document: 'libs/client/src/openapi.json',
  schema: 'libs/client/src/generated/schema.ts',
} as const;

export type ClientFiles = Record<keyof typeof CLIENT_FILES, string>;

/**
 * The OpenAPI description exactly as served, built from the app without starting it. The settings are fixed
 * (defaults, placeholder store and key, which the description never shows) so that every machine writes the
 * same file; the served copy differs only by the install's `PUBLIC_URL` in `info.license.url`.
 */
export async function buildClientDocument(): Promise<object> {
  const config = loadConfig(
    {},
    { DATABASE_URL: 'postgres://localhost/unused', LOCKSTEP_MASTER_KEY: `${'A'.repeat(43)}=` },
  );
  const app = await createPreviewApp(config);
  try {
    return buildOpenApiDocument(app, config);
  } finally {
    await app.close();
  }
}
