/** `--name value` pairs after the command words; `--flag` alone means "true". */
export function parseArgs(argv: string[]): { words: string[]; options: Record<string, string> } {
  const words: string[] = [];
  const options: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg.startsWith('--')) {
      const [name, inline] = arg.slice(2).split(/=(.*)/s, 2);
      if (inline !== undefined) options[name] = inline;
      else if (i + 1 < argv.length && !argv[i + 1].startsWith('--')) options[name] = argv[++i];
      else options[name] = 'true';
    } else words.push(arg);
  }
  return { words, options };
}

export class UsageError extends Error {}

export function required(options: Record<string, string>, name: string): string {
  const value = options[name];
  if (value === undefined || value === 'true' && name !== 'api-enabled') throw new UsageError(`missing --${name}`);
  return value;
}

export function optionalBool(options: Record<string, string>, name: string): boolean | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  if (value !== 'true' && value !== 'false') throw new UsageError(`--${name} takes true or false`);
  return value === 'true';
}

export function optionalChoice<T extends string>(options: Record<string, string>, name: string, choices: readonly T[]): T | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  if (!(choices as readonly string[]).includes(value)) throw new UsageError(`--${name} takes ${choices.join(' or ')}`);
  return value as T;
}
