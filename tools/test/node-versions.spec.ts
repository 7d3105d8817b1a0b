import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gte, minVersion, satisfies, subset, validRange } from 'semver';

const root = join(__dirname, '..', '..');
const readJson = (file: string) => JSON.parse(readFileSync(join(root, file), 'utf8'));
const pkg = readJson('package.json');
const ENGINES: string = pkg.engines.node;
const DOCKERFILES = ['docker/Dockerfile.api', 'docker/Dockerfile.worker'];

/**
 * Runtime dependencies whose `engines` leave out Node 20 although the code they ship runs on it, by
 * name@version (a new version must be looked at again). They are why `engines` admits Node 20 while not every
 * dependency declares it; the Docker images use a Node every dependency declares.
 */
const RUNS_ON_NODE_20: Record<string, string> = {
  'nestjs-pino@5.2.1':
    'declares >=22.12.0; its CommonJS build needs only AsyncLocalStorage, and the tests run it on Node 20',
};

interface Dependency {
  id: string;
  node: string;
  /** Installed for building and testing only (`npm install --omit=dev` leaves it out). */
  dev: boolean;
}

interface LockEntry {
  version?: string;
  dev?: boolean;
  engines?: { node?: string };
}

/** Every package of the lock file that names the Node it supports. */
function lockedPackages(): Dependency[] {
  const lock = readJson('package-lock.json') as { packages: Record<string, LockEntry> };
  const result: Dependency[] = [];
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (path === '') continue;
    // The installed manifest when there is one (optional packages of other platforms are not installed here).
    const installed = join(root, path, 'package.json');
    const manifest = existsSync(installed)
      ? (JSON.parse(readFileSync(installed, 'utf8')) as LockEntry)
      : entry;
    const node = manifest.engines?.node;
    if (node)
      result.push({
        id: `${path.replace(/^.*node_modules\//, '')}@${manifest.version}`,
        node,
        dev: entry.dev === true,
      });
  }
  return result;
}

/** The Node version of each `FROM` line (`24` pulls the newest 24.x: as a range, any 24.x). */
function dockerNodeVersions(file: string): string[] {
  const lines = readFileSync(join(root, file), 'utf8')
    .split('\n')
    .filter((line) => /^FROM\s/i.test(line));
  return lines.map(
    (line) => /^FROM\s+node:(\d+(?:\.\d+){0,2})-/i.exec(line)?.[1] ?? `not a versioned node image: ${line}`,
  );
}

describe('the Node versions Lockstep runs on', () => {
  const packages = lockedPackages();
  // What `npm install --omit=dev` installs: the images' node_modules.
  const runtime = packages.filter((p) => !p.dev);

  it('reads a valid range from package.json (its lock file agreeing) and from every package', () => {
    expect(runtime.length).toBeGreaterThan(100);
    expect(validRange(ENGINES)).not.toBeNull();
    expect(readJson('package-lock.json').packages[''].engines.node).toBe(ENGINES);
    expect(packages.filter((p) => validRange(p.node) === null)).toEqual([]);
  });

  // The build stage installs every package (dev ones too); the final stage runs the runtime ones.
  it.each(DOCKERFILES)('%s uses one Node that engines and every package admit', (file) => {
    const versions = dockerNodeVersions(file);
    expect(versions.length).toBeGreaterThan(0);
    expect(new Set(versions).size).toBe(1);
    const [version] = versions;
    expect(version).toMatch(/^\d+/);
    expect(subset(version!, ENGINES)).toBe(true);
    expect(packages.filter((p) => !subset(version!, p.node))).toEqual([]);
  });

  it('admits only versions every runtime dependency supports, but for the named exceptions, each still needed', () => {
    const beyond = runtime.filter((p) => !subset(ENGINES, p.node));
    expect(beyond.map((p) => p.id).sort()).toEqual(Object.keys(RUNS_ON_NODE_20).sort());
  });

  it('admits nothing older than the Node API the code is type-checked against (@types/node)', () => {
    // @types/node's major.minor is the Node release whose API it describes (its patch counts type revisions).
    const [major, minor] = (readJson('node_modules/@types/node/package.json').version as string).split('.');
    expect(gte(minVersion(ENGINES)!, `${major}.${minor}.0`)).toBe(true);
  });

  it('admits the Node running these tests', () => {
    expect(satisfies(process.version, ENGINES)).toBe(true);
  });
});
