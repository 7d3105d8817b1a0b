import 'reflect-metadata';
import { loadConfig } from '@lockstep/config';
import { createApp } from './app.factory';

async function main(): Promise<void> {
  const config = loadConfig();
  const app = await createApp(config);
  await app.listen(config.PORT);
}

main().catch((error: unknown) => {
  process.stderr.write(
    `lockstep api failed to start: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
