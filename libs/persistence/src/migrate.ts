import { createDataSource } from './data-source';

/**
 * Applies pending migrations. Concurrent callers (api and worker starting together) are serialised by a
 * PostgreSQL advisory lock, so each migration runs exactly once.
 */
export async function runMigrations(url: string): Promise<string[]> {
  const dataSource = createDataSource(url);
  await dataSource.initialize();
  // Advisory locks belong to a session: hold it on one dedicated connection for the whole run.
  const lock = dataSource.createQueryRunner();
  try {
    await lock.connect();
    await lock.query('SELECT pg_advisory_lock(7316001)');
    try {
      const applied = await dataSource.runMigrations({ transaction: 'all' });
      return applied.map((m) => m.name);
    } finally {
      await lock.query('SELECT pg_advisory_unlock(7316001)');
      await lock.release();
    }
  } finally {
    await dataSource.destroy();
  }
}

if (require.main === module) {
  const url = process.env.DATABASE_URL;
  if (!url) {
    process.stderr.write('DATABASE_URL is not set\n');
    process.exit(2);
  }
  runMigrations(url).then(
    (names) => process.stdout.write(JSON.stringify({ applied: names }) + '\n'),
    (error: unknown) => {
      process.stderr.write(`migration failed: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
}
