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

/**
 * One option a command accepts: the placeholder its usage shows (`true|false` for a switch, which may be
 * given alone), and whether the command needs it.
 */
export interface OptionSpec {
  value: string;
  required?: true;
}

/** A command's options, in the order its usage shows them. The parser accepts these and no other. */
export type OptionSpecs = Record<string, OptionSpec>;

/** The values a command receives: a required option is always there. */
export type OptionValues<S extends OptionSpecs> = {
  [K in keyof S]: S[K] extends { required: true } ? string : string | undefined;
};

/** `key create --account ACC [--sync SYNC_ID]`: the usage line, made from the command's option list. */
export function usageLine(name: string, specs: OptionSpecs): string {
  const options = Object.entries(specs).map(([option, spec]) => {
    const text = `--${option} ${spec.value}`;
    return spec.required ? text : `[${text}]`;
  });
  return [name, ...options].join(' ');
}

/** The options given, checked against the command's list: an option it does not take is a usage error. */
export function checkOptions<S extends OptionSpecs>(
  name: string,
  specs: S,
  options: Record<string, string>,
): OptionValues<S> {
  const unknown = Object.keys(options).filter((option) => !Object.hasOwn(specs, option));
  if (unknown.length > 0) {
    const names = unknown.map((option) => `--${option}`).join(', ');
    throw new UsageError(`"${name}" takes no ${names}. Usage:\n  ${usageLine(name, specs)}`);
  }
  for (const [option, spec] of Object.entries(specs)) {
    const value = options[option];
    // A bare `--name` reads as "true": only a switch may be given without a value.
    const bare = value === 'true' && spec.value !== 'true|false';
    if (spec.required && (value === undefined || bare)) throw new UsageError(`missing --${option}`);
  }
  return options as OptionValues<S>;
}

export function optionalBool(options: Partial<Record<string, string>>, name: string): boolean | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  if (value !== 'true' && value !== 'false') throw new UsageError(`--${name} takes true or false`);
  return value === 'true';
}

export function optionalChoice<T extends string>(
  options: Partial<Record<string, string>>,
  name: string,
  choices: readonly T[],
): T | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  if (!(choices as readonly string[]).includes(value)) {
    throw new UsageError(`--${name} takes ${choices.join(' or ')}`);
  }
  return value as T;
}
