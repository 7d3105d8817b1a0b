/** Command-line parsing shared by the benchmarks: `node:util` parseArgs plus the checks every figure needs. */
import { parseArgs } from 'node:util';

type Spec = Record<string, { type: 'string' | 'boolean'; short?: string }>;

export interface BenchArgs {
  values: Record<string, string | boolean | undefined>;
  /** A whole number of at least `min` (underscores allowed: 200_000), or `fallback` when the flag is absent. */
  count(name: string, fallback: number, min?: number): number;
  /** A comma-separated list whose items must all be in `allowed`, or `fallback` when the flag is absent. */
  list<T extends string>(name: string, allowed: readonly T[], fallback: T[]): T[];
  text(name: string, fallback: string): string;
  flag(name: string): boolean;
}

/** Parses `argv` strictly (an unknown flag is an error showing `usage`); `--help` prints `usage` and exits. */
export function benchArgs(argv: string[], spec: Spec, usage: string): BenchArgs {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { ...spec, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${usage}`);
  }
  if (values['help']) {
    process.stdout.write(`${usage}\n`);
    process.exit(0);
  }
  const raw = (name: string): string | undefined => {
    const value = values[name];
    return typeof value === 'string' ? value : undefined;
  };
  return {
    values,
    count(name, fallback, min = 1) {
      const value = raw(name);
      if (value === undefined) return fallback;
      const n = Number(value.replace(/_/g, ''));
      if (!Number.isInteger(n) || n < min) throw new Error(`--${name} needs an integer >= ${min}\n${usage}`);
      return n;
    },
    list(name, allowed, fallback) {
      const value = raw(name);
      if (value === undefined) return fallback;
      const items = value
        .split(',')
        .map((item) => item.trim())
        .filter(Boolean);
      for (const item of items)
        if (!allowed.includes(item as never))
          throw new Error(`--${name}: unknown "${item}" (${allowed.join(', ')})`);
      return items as typeof fallback;
    },
    text(name, fallback) {
      return raw(name) ?? fallback;
    },
    flag(name) {
      return values[name] === true;
    },
  };
}
