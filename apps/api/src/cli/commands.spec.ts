import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs, UsageError } from './args';
import { COMMANDS, findCommand, usageText } from './commands';

/** Where the operator CLI is documented, one line per command. */
const CLI_DOC = join(__dirname, '..', '..', '..', '..', 'docs', 'operating.md');

/** The `--name` options a usage line shows, in order. */
const optionsIn = (line: string) => [...line.matchAll(/--([a-z][a-z-]*)/g)].map((m) => m[1]);

/** The documented CLI lines by command: `pending-delete approve|ignore|restore ...` documents three commands. */
function readmeLines(): Map<string, string> {
  const lines = new Map<string, string>();
  for (const line of readFileSync(CLI_DOC, 'utf8').split('\n')) {
    const text = /^npm run -s lockstep -- (.*)$/.exec(line)?.[1];
    if (text === undefined) continue;
    const [group, verbs] = text.split(' ');
    for (const verb of verbs!.split('|')) lines.set(`${group} ${verb}`, text);
  }
  return lines;
}

const commands = Object.entries(COMMANDS);

describe('operator CLI usage', () => {
  it.each(commands)('the usage text names every option "%s" takes', (name, command) => {
    const line = usageText()
      .split('\n')
      .map((l) => l.trim())
      .find((l) => l.startsWith(`${name} `));
    expect(line).toBeDefined();
    expect(optionsIn(line!)).toEqual(Object.keys(command.options));
  });

  it.each(commands)('docs/operating.md shows "%s" with exactly the options it takes', (name, command) => {
    const line = readmeLines().get(name);
    expect(line).toBeDefined();
    expect(optionsIn(line!).sort()).toEqual(Object.keys(command.options).sort());
  });

  it('refuses an option the command does not take, with its usage', () => {
    const { words, options } = parseArgs([
      'sync',
      'start',
      '--id',
      'sync_x',
      '--delete_approval',
      'auto_approve',
    ]);
    expect(() => findCommand(words, options)).toThrow(UsageError);
    expect(() => findCommand(words, options)).toThrow(
      /takes no --delete_approval[^]*sync start --id SYNC_ID .*--delete-approval/,
    );
  });

  it('refuses a required option that is missing or given without a value', () => {
    expect(() =>
      findCommand(['key', 'create'], parseArgs(['--name', 'x', '--scope', 'read']).options),
    ).toThrow('missing --account');
    expect(() =>
      findCommand(['key', 'create'], parseArgs(['--account', '--name', 'x', '--scope', 'read']).options),
    ).toThrow('missing --account');
  });

  it('hands the command exactly the options given, a switch given alone as true', () => {
    const { options } = parseArgs(['--email', 'e@example.com', '--password', 'p', '--api-enabled']);
    expect(findCommand(['account', 'create'], options).values).toEqual({
      email: 'e@example.com',
      password: 'p',
      'api-enabled': 'true',
    });
  });

  it('lists every command for an unknown one', () => {
    expect(() => findCommand(['account', 'explode'], {})).toThrow(UsageError);
    for (const name of Object.keys(COMMANDS)) expect(usageText()).toContain(`\n  ${name} `);
  });
});
