/**
 * The connector SDK: what Lockstep knows about one kind of app. A connector package exports one
 * `ConnectorDeclaration` made with `defineConnector()`; the registry (`libs/connectors/registry`) lists them.
 * Everything the API, the engine and live export do to an app goes through a `Connection`.
 */
import type { CanonicalValue, RemoteField, TypeClass } from '@lockstep/domain';
import type { ConnectorCoordination } from './coordination';
import type { EgressPolicy } from './egress';
import type { LiveExportTarget } from './live-export';

/** One credential field of an `api_key` connector, exactly as spec section 2.6 lists it. */
export interface AuthFieldDeclaration {
  /** The key a client sends under a side's `auth`, passed through verbatim (camelCase is allowed here). */
  id: string;
  label: string;
  optional: boolean;
  placeholder: string;
  options: string[] | null;
  help: { label: string; url: string };
  /** Never echo or log the value (all credential fields are secret unless said otherwise). */
  secret?: boolean;
}

/** OAuth 2.0 authorization-code (PKCE) endpoints and scopes of an app's browser sign-in. */
export interface OAuthSignInDeclaration {
  issuer?: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  scopes: string[];
  /**
   * A service setting (`ConnectContext.settings`) whose value, when set, replaces the origin of both
   * endpoints (Airtable: `AIRTABLE_OAUTH_URL`): for a proxy, and for tests against a simulator.
   */
  originSetting?: string;
}

export type ConnectorAuthDeclaration =
  | {
      method: 'api_key';
      fields: AuthFieldDeclaration[];
      /**
       * The app also offers a browser sign-in (spec 2.6: such a connector is listed as `api_key`, and a side
       * deferred to a person can be connected either way in the console; a signed-in side keeps that method).
       * The credentials it stores are the tokens of `OAUTH_CREDENTIAL_KEYS`.
       */
      oauth?: OAuthSignInDeclaration;
    }
  | {
      method: 'oauth';
      fields: null;
      /** OAuth 2.0 authorization-code (PKCE) endpoints used by the console's browser sign-in. */
      oauth: OAuthSignInDeclaration;
    };

/**
 * The credentials a browser sign-in stores (the console's token exchange), as `connect` receives them:
 * `access_token`, `token_type`, and when the app gave them `refresh_token`, `expires_at` (ISO time) and
 * `scope`.
 */
export const OAUTH_CREDENTIAL_KEYS = ['access_token', 'token_type', 'refresh_token', 'expires_at', 'scope'];

/** The browser sign-in a connector offers, its endpoints' origin taken from `settings`; null without one. */
export function browserSignIn(
  declaration: Pick<ConnectorDeclaration, 'auth'>,
  settings: Readonly<Record<string, string | undefined>> = {},
): OAuthSignInDeclaration | null {
  const oauth = declaration.auth.oauth;
  if (!oauth) return null;
  const origin = oauth.originSetting ? settings[oauth.originSetting]?.trim() : undefined;
  if (!origin) return oauth;
  const moved = (endpoint: string): string => {
    const url = new URL(endpoint);
    return `${origin.replace(/\/+$/, '')}${url.pathname}${url.search}`;
  };
  return {
    ...oauth,
    authorizationEndpoint: moved(oauth.authorizationEndpoint),
    tokenEndpoint: moved(oauth.tokenEndpoint),
  };
}

/** The credential field of a database connector whose one credential is a connection string. */
export const CONNECTION_STRING_FIELD = 'connectionString';

/**
 * The auth of a database connector: one secret connection string, with an example and where its format is
 * described.
 */
export function connectionStringAuth(
  placeholder: string,
  help: { label: string; url: string },
): { method: 'api_key'; fields: AuthFieldDeclaration[] } {
  return {
    method: 'api_key',
    fields: [
      {
        id: CONNECTION_STRING_FIELD,
        label: 'Connection string',
        optional: false,
        placeholder,
        options: null,
        help,
        secret: true,
      },
    ],
  };
}

export type ChangeDetectionMode = 'change_feed' | 'incremental' | 'full_scan';

export interface ConnectorCapabilities {
  createTables: boolean;
  createFields: boolean;
  /** Tables can be synced through views (spec 2.7 `views`). */
  views: boolean;
  /**
   * `createTable` / `createField` make a `relation` field with `typeDetails.target_table` (a table of the
   * same base) a link to that table; the mappings then allow creating a field from a foreign key whose
   * target table is mapped. Absent: false (a relation is created as a plain field, or refused).
   */
  createRelations?: boolean;
  /** Best first. The engine always keeps a periodic full scan as a safety net. */
  changeDetection: ChangeDetectionMode[];
  /** A sync may join two sides of this same connector type. */
  syncToItself: boolean;
  liveExport: {
    source: boolean;
    destination: boolean;
    /** What a destination `location` is for this connector (PostgreSQL: schema; MySQL: database; Airtable: base). */
    locationKind: 'schema' | 'database' | 'base' | null;
  };
}

export type Credentials = Record<string, string>;

/** Context every connection gets from the service: the egress policy from config, the shared rate budget. */
export interface ConnectContext {
  egress: EgressPolicy;
  /** Connection pool size the caller wants (default: connector's choice). */
  poolSize?: number;
  /**
   * Tag for this connection's writes (for example the sync id), so `readChanges` marks exactly these as
   * `own` and `ignoreOwnWrites` leaves out only these: two syncs on one table then still see each other's
   * writes. Default: one tag for every Lockstep write. Optional for connectors (added after the first SDK).
   */
  writeOrigin?: string;
  /**
   * Rate budgets and locks shared by every connection of the service (Redis-backed in the API and the
   * worker), so syncs, live exports and worker processes talking to one app key stay within its budget
   * together. Absent in tests and tools: an app connector then keeps them in its process. Database connectors
   * ignore it.
   */
  shared?: ConnectorCoordination;
  /**
   * The service's settings an app connector reads (its base-URL setting, `AIRTABLE_API_URL`), by setting name;
   * the API and the worker pass them from their config, so no connector reads `process.env`. A setting that is
   * absent takes the connector's default. Database connectors ignore it.
   */
  settings?: Readonly<Record<string, string | undefined>>;
  /**
   * Where the connection's credentials are stored (a sync side's, encrypted), for credentials that change
   * while the connection runs: an app connector saves the tokens it renewed (`OAUTH_CREDENTIAL_KEYS`) through
   * it, so another process and the next start use them. Absent (a check of credentials a person just gave,
   * tests, tools): renewed tokens live in the connection only. Database connectors ignore it.
   */
  credentialStore?: CredentialStore;
  /**
   * The operator's OAuth client registration for this connector (`OAUTH_CLIENTS`), which a token refresh
   * authenticates with. Absent when none is configured: a signed-in connection then cannot renew its token.
   */
  oauthClient?: OAuthClientRegistration;
}

/** The narrow store of one connection's credentials (the service implements it per sync side). */
export interface CredentialStore {
  /** A stable name of the place, never a secret (`sync:<id>:left`): the key of the renewal lock. */
  readonly key: string;
  /** The credentials stored now (another process may have renewed them since the connection opened). */
  load(): Promise<Credentials>;
  /**
   * Stores renewed credentials in place of those the connection was opened with. Resolves false, storing
   * nothing, when the place holds another credential now (a person connected it again meanwhile).
   */
  save(credentials: Credentials): Promise<boolean>;
}

export interface OAuthClientRegistration {
  clientId: string;
  clientSecret?: string;
  tokenEndpointAuthMethod: 'client_secret_basic' | 'client_secret_post' | 'none';
}

/** The tag every connector's change capture records for Lockstep's writes (without a `writeOrigin`). */
export const OWN_WRITE_ORIGIN = 'lockstep';

/**
 * The tag of a connection's writes in a change log: `lockstep`, or `lockstep:<writeOrigin>`, cut to
 * `maxLength` characters when the log's column is bounded.
 */
export function writeOriginTag(
  writeOrigin: string | undefined,
  maxLength = Number.POSITIVE_INFINITY,
): string {
  return writeOrigin ? `${OWN_WRITE_ORIGIN}:${writeOrigin}`.slice(0, maxLength) : OWN_WRITE_ORIGIN;
}

export interface ConnectorDeclaration {
  /** Connector slug (`postgres`, `mysql`); the `connector` value of a side. */
  type: string;
  displayName: string;
  auth: ConnectorAuthDeclaration;
  /** Name of the plan that unlocks this connector (`free` is available to every account). */
  plan: string;
  capabilities: ConnectorCapabilities;
  /**
   * What this connector's table setup writes into the app, in words for the person who reviews a sync before
   * starting it (the `user_confirmation` instruction names it per side). Optional: without it the instruction
   * describes the setup in general terms.
   */
  tableSetup?: TableSetupDescription;
  /**
   * Opens a connection with credentials and a base (schema, database). `base` may be omitted only for
   * `checkCredentials` and `listBases`. Never throws with credentials in the message.
   */
  connect(credentials: Credentials, base: string | null, context: ConnectContext): Promise<Connection>;
}

/** Table setup in words; each completes "adds ..." / "installs ..." in a sentence. */
export interface TableSetupDescription {
  /**
   * The service id column `prepareTable` adds with `serviceIdColumn` (a mappings save does it for every
   * mapped table).
   */
  serviceIdColumn: string;
  /** What `prepareTable` with `changeCapture` installs (starting the sync does it). */
  changeCapture: string;
}

export interface BaseInfo {
  /** Remote id of the base (for databases: the schema or database name). */
  id: string;
  name: string;
}

export interface ViewsInfo {
  required: boolean;
  options: { value: string; name: string }[];
}

export interface TableInfo {
  remoteId: string;
  name: string;
  /** null when the connector has no views. */
  views: ViewsInfo | null;
  /** A table that cannot be written (a database view). */
  readOnly: boolean;
}

/** A field as the connector describes it (the schema cache keeps it as it is, with a service id). */
export type FieldInfo = RemoteField;

/** A record as a connector reads it: values keyed by field remote id, in canonical form. */
export interface SourceRecord {
  remoteId: string;
  values: Record<string, CanonicalValue>;
  /** The service id column's value (`lockstep_id`) when the table has one. */
  serviceId?: string | null;
  /** The app's own modified time for the record, when it has one (ISO 8601 UTC). */
  modifiedAt?: string | null;
}

export interface ReadPageOptions {
  /** Opaque checkpoint returned by the previous page; absent for the first page. */
  after?: string | null;
  pageSize: number;
  /** Field remote ids to read (default: every readable field). */
  fields?: string[];
  /**
   * Only the records of this view (spec 2.7 `views`, a `TableInfo.views` option value), for connectors with
   * `capabilities.views`; others ignore it.
   */
  view?: string | null;
  /**
   * Only records whose key sorts before this remote id (exclusive), for connectors with `splitKeyRanges`
   * (the bound is a range's `before`); others are never given one.
   */
  before?: string | null;
}

/**
 * One key range of a table (`splitKeyRanges`): `readPage` from `after` with `before` as its bound streams
 * exactly the range's records. Null `after`: from the first record; null `before`: to the last.
 */
export interface KeyRange {
  /** A page checkpoint (`readPage`'s `after`) positioned just before the range's first record. */
  after: string | null;
  /** The remote id of the next range's first record (exclusive). */
  before: string | null;
}

export interface RecordPage {
  records: SourceRecord[];
  /** Checkpoint to pass as `after` for the next page; null when this was the last page. */
  next: string | null;
}

export interface Change {
  kind: 'upsert' | 'delete';
  remoteId: string;
  /** The record as it is now, for upserts (read in the same call). */
  record?: SourceRecord;
  /** When the change was committed, as the app reports it (ISO 8601 UTC). */
  at: string;
  /** True when Lockstep's own connection made the change (its `writeOrigin`, when one was given). */
  own: boolean;
}

export interface ChangeBatch {
  changes: Change[];
  /** Checkpoint to pass next time; advance it only after the changes are durably queued. */
  checkpoint: string;
  /** More changes are waiting beyond `limit`. */
  hasMore: boolean;
}

export interface ReadChangesOptions {
  limit: number;
  /**
   * Only the records of this view (spec 2.7), for connectors with `capabilities.views`: a changed record that is
   * not in the view is reported as a delete (it left what the sync sees), as a full scan through the view would.
   */
  view?: string | null;
  /** Leave out changes Lockstep's own writes made (default false). */
  ignoreOwnWrites?: boolean;
}

export interface RecordWrite {
  /** Field remote id -> canonical value. */
  values: Record<string, CanonicalValue>;
}

export interface RecordCreate extends RecordWrite {
  /**
   * The link's service id (a UUID), written to the service id column so a retried create adopts the row:
   * a second create with the same service id returns the existing row's remote id instead of a new row.
   */
  serviceId: string;
}

export interface RecordUpdate extends RecordWrite {
  remoteId: string;
  /**
   * A conditional update: the values (field remote id -> canonical value) the caller last read for fields of
   * the record, as `readByIds` returns them. The connector locks the row, reads it in its write transaction
   * and writes only if every listed field still holds its value; otherwise nothing is written to the row and
   * its result is kind `changed` (someone edited it since the caller read it). Without it the update is
   * unconditional.
   */
  expected?: Record<string, CanonicalValue>;
}

export type WriteResult =
  { ok: true; remoteId: string; record: SourceRecord | null } | { ok: false; error: ConnectorErrorInfo };

export interface ConnectorErrorInfo {
  kind: ConnectorErrorKind;
  message: string;
  retryable: boolean;
  /** The app's or driver's own code (`23505`, `ER_DUP_ENTRY`...). */
  appCode?: string;
}

export type ConnectorErrorKind =
  | 'auth'
  | 'permission'
  | 'not_found'
  | 'rate_limited'
  | 'transient'
  | 'invalid_data'
  | 'unsupported'
  /**
   * A conditional update found the record edited since the caller read it (`RecordUpdate.expected`); nothing
   * was written.
   */
  | 'changed';

/** A field to create, typed from the mapped counterpart (another connector's field). */
export interface FieldSpec {
  name: string;
  typeClass: TypeClass;
  /** The counterpart's own type and details, to pick the closest native type. */
  sourceType?: string;
  typeDetails?: Record<string, unknown> | null;
  required?: boolean;
  primary?: boolean;
}

export interface PrepareOptions {
  /** Install change capture (triggers and change log) where the connector has a change feed. */
  changeCapture: boolean;
  /**
   * Add the service id column (`lockstep_id`, uuid, unique, defaulted) even when the table has a
   * single-column primary key, so a create retried after a crash adopts the row it already wrote. The remote
   * id stays the primary key. Default false.
   */
  serviceIdColumn?: boolean;
}

export interface PreparedTable {
  /**
   * The field (remote id) holding the service id, or null when the table has a single-column primary key and
   * no service id column. With `PrepareOptions.serviceIdColumn` it is always the service id column (the
   * remote id then stays the primary key; records carry the column's value as `serviceId`).
   */
  serviceIdField: string | null;
  changeCapture: boolean;
}

export interface CheckpointPolling {
  /** The shortest interval between two probes, in milliseconds. */
  intervalMs: number;
  perTable: boolean;
}

export interface Connection {
  readonly type: string;
  /** Throws ConnectorError kind `auth` (credentials rejected, with the app's reason) or `transient`. */
  checkCredentials(): Promise<void>;
  listBases(): Promise<BaseInfo[]>;
  listTables(): Promise<TableInfo[]>;
  listFields(tableRemoteId: string): Promise<FieldInfo[]>;

  /**
   * Streams a table in pages, ordered by a stable key, resumable from `after`; never the whole table in
   * memory.
   */
  readPage(tableRemoteId: string, options: ReadPageOptions): Promise<RecordPage>;
  /**
   * How many records `readPage` would stream from the table now, counted by the app (the initial sync's
   * preview counts a side it does not match against without paging through it). Optional: without it, the
   * engine counts the pages.
   */
  countRecords?(tableRemoteId: string): Promise<number>;
  /**
   * Splits the table into at most `count` disjoint key ranges of about equal size, in key order, that cover
   * every record now and later (the first starts at the beginning, the last has no end). Optional: only
   * connectors with ordered keys offer it (the initial sync of a large pair then runs its ranges on several
   * workers); fewer ranges when the table has fewer records.
   */
  splitKeyRanges?(tableRemoteId: string, count: number): Promise<KeyRange[]>;
  /**
   * Records by remote id; missing ids are simply absent from the result. With `view` (connectors with
   * `capabilities.views`), records outside that view are absent too: what a mapped view does not show is gone
   * for the sync.
   */
  readByIds(
    tableRemoteId: string,
    remoteIds: string[],
    options?: { view?: string | null },
  ): Promise<SourceRecord[]>;
  /** Finds records by service id (to adopt rows a crashed create already wrote). */
  readByServiceIds(tableRemoteId: string, serviceIds: string[]): Promise<SourceRecord[]>;

  /** A checkpoint meaning "now": changes after it are returned by readChanges. */
  currentCheckpoint(tableRemoteId: string): Promise<string>;
  /**
   * How a connector without `watch` wants its checkpoints polled for wake-ups. Absent: once a second, the
   * first watched table's checkpoint standing for every table (a database's change log). An app whose
   * requests are budgeted declares a longer `intervalMs`; `perTable` when each table has a checkpoint of its
   * own (every watched table is then probed; the connector answers one probe of them all cheaply).
   */
  readonly checkpointPolling?: CheckpointPolling;
  readChanges(tableRemoteId: string, since: string, options: ReadChangesOptions): Promise<ChangeBatch>;
  /**
   * Wakes the caller when a change commits (PostgreSQL LISTEN/NOTIFY). Absent when the connector can only
   * be polled. Returns a function that stops watching.
   */
  watch?(tableRemoteIds: string[], onChange: (tableRemoteId: string) => void): Promise<() => Promise<void>>;

  /**
   * One result per input, in input order; one bad row never fails the others. A row the app refuses is
   * `{ ok: false }` with kind `invalid_data` (constraint, type, size) or another kind from the error table;
   * an update of a record that does not exist is kind `not_found`, a conditional update of a record edited
   * since (`RecordUpdate.expected`) is kind `changed`; deleting a record that is already gone is `ok` (the
   * outcome the caller wanted). Throws only when the whole call failed (connection lost).
   */
  createRecords(tableRemoteId: string, rows: RecordCreate[]): Promise<WriteResult[]>;
  updateRecords(tableRemoteId: string, rows: RecordUpdate[]): Promise<WriteResult[]>;
  deleteRecords(tableRemoteId: string, remoteIds: string[]): Promise<WriteResult[]>;

  createTable(name: string, fields: FieldSpec[]): Promise<TableInfo>;
  createField(tableRemoteId: string, field: FieldSpec): Promise<FieldInfo>;

  /** Adds the service id column where needed and installs change capture; idempotent. */
  prepareTable(tableRemoteId: string, options: PrepareOptions): Promise<PreparedTable>;
  /**
   * Removes this connection's reader of the table; once no other reader is left, what prepareTable installed
   * (triggers, change-log entries, the service id column it added, and the change log itself once no table of
   * the base's database is read). Keeps the rows and the application's columns. Idempotent.
   */
  unprepareTable(tableRemoteId: string): Promise<void>;

  /**
   * Live export destination operations (live-export.ts); present on connectors that serve as a destination.
   */
  readonly liveExport?: LiveExportTarget;

  close(): Promise<void>;
}

export function defineConnector(declaration: ConnectorDeclaration): ConnectorDeclaration {
  if (!/^[a-z][a-z0-9_]*$/.test(declaration.type)) {
    throw new Error(`connector type "${declaration.type}" must be a lower-case slug`);
  }
  if (declaration.auth.method === 'api_key' && declaration.auth.fields.length === 0) {
    throw new Error(`connector "${declaration.type}" declares api_key auth without fields`);
  }
  return Object.freeze(declaration);
}
