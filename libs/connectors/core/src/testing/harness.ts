import type { CanonicalValue, TypeClass } from '@lockstep/domain';
import type { ConnectContext, ConnectorDeclaration, Credentials, FieldSpec } from '../connector';

/**
 * Writes made "outside Lockstep": through the connector's native driver on its own connection, the way
 * another application would. Table names are plain names inside the harness's base; column names are the
 * columns of the tables the harness created. Values are driver parameters (the suite only sends strings,
 * safe integers and null).
 */
export interface OutsideWriter {
  insert(table: string, values: Record<string, string | number | null>): Promise<void>;
  update(
    table: string,
    where: Record<string, string | number>,
    values: Record<string, string | number | null>,
  ): Promise<void>;
  delete(table: string, where: Record<string, string | number>): Promise<void>;
}

/** One column of the discovery fixture table: what `listFields` must say about it and what must round-trip. */
export interface FixtureColumn {
  /** Column name, which is also the field's remote id. */
  name: string;
  /** The connector's own type string expected in `FieldInfo.type` (exact string, or a pattern). */
  type: string | RegExp;
  typeClass: TypeClass;
  read: boolean;
  write: boolean;
  /** Expected `required` / `primary` flags (checked only when given). */
  required?: boolean;
  primary?: boolean;
  /** Keys that `typeDetails` must contain with these values (a subset; `toMatchObject`). */
  typeDetails?: Record<string, unknown>;
  /** Canonical values that must come back equal after a write through the connector (writable columns). */
  samples?: CanonicalValue[];
  /** Values the app normalises on the way in: written as `write`, read back as `read`. */
  normalized?: { write: CanonicalValue; read: CanonicalValue }[];
}

export interface ContractHarness {
  /** Title of the top-level describe block (default: the declaration's type). */
  name?: string;
  declaration: ConnectorDeclaration;
  /** Default: the default egress policy (private and loopback allowed). */
  context?: ConnectContext;

  /**
   * Called once before every test (in `beforeAll`): creates a fresh, empty base (a schema, a database) for
   * this run, and returns its base id (what `connect(credentials, base)` takes).
   */
  setup(): Promise<string>;
  /** Called once after every test: drops the base and closes the harness's own clients. */
  teardown(): Promise<void>;

  /** Credentials that work (read after `setup`). */
  goodCredentials(): Credentials;
  /** Credentials the app rejects (wrong password): must give ConnectorError kind `auth`. */
  badCredentials(): Credentials;
  /** Credentials pointing at a place where nothing listens: must give ConnectorError kind `transient`. */
  unreachableCredentials?(): Credentials;
  /** The good credentials aimed at another host (to check the egress policy is applied before connecting). */
  credentialsForHost?(host: string): Credentials;
  /** Values that must never appear in an error message (passwords, connection strings). */
  secrets(): string[];

  outside: OutsideWriter;

  /** The discovery / round-trip fixture: a table with one column per native type the connector knows. */
  fixture: {
    /** Creates table `name` (and whatever it references) in the base, with `columns` (keys included). */
    create(name: string): Promise<void>;
    columns: FixtureColumn[];
  };

  /**
   * Creates a plain table `name` in the base with the columns `title` (text, at most 100 characters,
   * nullable) and `amount` (integer, nullable), plus, when `primaryKey`, a column `id` (integer primary key,
   * written by the caller, not generated). Without a primary key the table has no key at all, so
   * `prepareTable` must add the service id column.
   */
  createPlainTable(name: string, options: { primaryKey: boolean }): Promise<void>;
  /** Values of a plain-table row the app must refuse with kind `invalid_data` (default `{ amount: 'not a number' }`). */
  invalidPlainValues?: Record<string, CanonicalValue>;

  /**
   * The type class a created field ends up with, when the connector maps a class onto another (PostgreSQL
   * creates `select` as text: `{ select: 'text' }`). Default: the same class.
   */
  createdClass?: Partial<Record<TypeClass, TypeClass>>;
  /** Classes `createTable` / `createField` cannot create (they must throw ConnectorError kind `unsupported`). */
  createUnsupported?: TypeClass[];
  /** Override the suite's field spec and samples for a class (see `CANONICAL_CASES`). */
  createdCases?: Partial<Record<TypeClass, Partial<CanonicalCase>>>;

  /** How long to wait for a change to show up in `readChanges` or `watch` (default 10 s). */
  changeTimeoutMs?: number;

  /**
   * Tests or describe blocks (by exact title) that check a database's semantics the app does not have (a unique
   * key column, a column length limit, own writes left out of the change log), with the reason. They are
   * reported as skipped with the reason in their title; the connector's own specs cover the app's behaviour
   * instead. Database connectors leave it out.
   */
  notApplicable?: Readonly<Record<string, string>>;
}

/** A field spec to create for one canonical class and values that must round-trip through it. */
export interface CanonicalCase {
  spec: Omit<FieldSpec, 'name'>;
  samples: CanonicalValue[];
}
