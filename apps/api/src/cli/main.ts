import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { ConfigError, loadConfig, resolveLocalEnv } from '@lockstep/config';
import { DomainError } from '@lockstep/contracts';
import { parseArgs, UsageError } from './args';
import { CliModule } from './cli.module';
import { findCommand } from './commands';
import { runMcpBridge } from './mcp-bridge';

/**
 * Operator CLI: `npm run -s lockstep -- <command>`. Prints JSON on stdout; on error a clear message on
 * stderr and exit code 1 (2 for usage errors). Settings the environment leaves unset come from the running
 * `npm start` (./.lockstep/runtime.json), so the CLI uses that service's store, Redis, queue prefix and key.
 */
async function main(argv: string[]): Promise<number> {
  const { words, options } = parseArgs(argv);
  try {
    // The stdio bridge speaks MCP on stdout and needs no store: it runs without the service's settings.
    if (words.length === 1 && words[0] === 'mcp') {
      await runMcpBridge(options, process.env);
      return 0;
    }
    const { command, values } = findCommand(words, options);
    const config = loadConfig(resolveLocalEnv(process.env));
    const app = await NestFactory.createApplicationContext(CliModule.forRoot(config), {
      logger: false,
      abortOnError: false,
    });
    try {
      const result = await command.run(app, values);
      process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      return 0;
    } finally {
      await app.close();
    }
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`lockstep: ${error.message}\n`);
      return 2;
    }
    if (error instanceof DomainError) {
      process.stderr.write(`lockstep: ${error.code}: ${error.message}\n`);
      const issues = error.details?.['issues'];
      if (Array.isArray(issues) && issues.length > 0)
        process.stderr.write(`${JSON.stringify({ issues }, null, 2)}\n`);
      return 1;
    }
    if (error instanceof ConfigError) {
      process.stderr.write(`lockstep: ${error.message}\n`);
      return 1;
    }
    process.stderr.write(`lockstep: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

main(process.argv.slice(2)).then((code) => process.exit(code));
