import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { DomainError, ErrorCode } from '@lockstep/contracts';
import { type Connection, type FieldSpec, isConnectorError } from '@lockstep/connectors-core';
import {
  createdFieldType,
  effectiveFieldDirection,
  type MappingsDocument,
  type MappingsSchema,
  mappingsToJson,
  parseMappings,
  putBlockingIssues,
  putErrorCode,
  type Reference,
  resolveMappings,
  type ResolvedField,
  type ResolvedTable,
  type ResolvedTablePair,
  type SchemaField,
  type SchemaTable,
  type SideName,
  transition,
  type ValidationIssue,
  validateMappings,
} from '@lockstep/domain';
import {
  MappingStore,
  SchemaStore,
  type SyncEntity,
  type SyncSideEntity,
  SyncStore,
} from '@lockstep/persistence';
import { canonicalJson } from '../common/idempotency/idempotency.interceptor';
import { staleRevisionMessage } from '../common/http/if-match';
import type { AuthContext } from '../common/auth/auth-context';
import { ConnectorCatalog } from '../connectors/connector-catalog';
import { SchemaService } from '../schema/schema.service';
import { SideConnections } from '../syncs/side-connections';
import { type LoadedSync, SIDES, SyncAccess } from '../syncs/sync-access';
import { SchemaIndex, toSideSchema } from './mappings.schema';

type Json = Record<string, unknown>;

export interface MappingsView {
  document: { tables: Json[] };
  revision: number;
}

/** Stored pairs keep the read-only parts a person edits in the app, keyed by their two table ids. */
interface StoredPair extends Json {
  left_table: string;
  right_table: string;
  filter?: Json;
  advanced_settings?: Json[];
}

const READ_ONLY_KEYS = ['filter', 'advanced_settings'] as const;

/**
 * The mappings document (spec 2.8, 4.4). Stored with references as prefixed ids (so a table or field keeps
 * its mapping across renames and refreshes); read back with remote ids. The PUT validates everything
 * before it writes anything, then runs `create` placeholders (adopting what a previous attempt created),
 * prepares the mapped tables in both apps, and saves with a compare-and-set on the revision.
 */
@Injectable()
export class MappingsService {
  private readonly syncs: SyncStore;
  private readonly mappings: MappingStore;
  private readonly tables: SchemaStore;

  constructor(
    @InjectDataSource() dataSource: DataSource,
    private readonly access: SyncAccess,
    private readonly schema: SchemaService,
    private readonly connections: SideConnections,
    private readonly catalog: ConnectorCatalog,
  ) {
    this.syncs = new SyncStore(dataSource.manager);
    this.mappings = new MappingStore(dataSource.manager);
    this.tables = new SchemaStore(dataSource.manager);
  }

  // ---- GET ----

  async get(auth: AuthContext, syncId: string): Promise<MappingsView> {
    const loaded = await this.access.load(auth, syncId);
    this.access.requireBothConnected(loaded);
    const schema = await this.loadSchema(loaded);
    return { document: this.render(loaded.sync, schema), revision: loaded.sync.mappingsRevision };
  }

  /** The stored document with remote ids, field directions as the current schema allows them. */
  render(sync: SyncEntity, schema: MappingsSchema): { tables: Json[] } {
    const index = new SchemaIndex(schema);
    const stored = (sync.mappings.tables ?? []) as StoredPair[];
    const parsed = parseMappings({ tables: stored });
    if (!parsed.ok)
      throw new Error(`stored mappings of ${sync.id} do not parse: ${parsed.issues[0]?.message}`);
    const remote = (id: Reference, lookup: (id: string) => { remoteId: string } | null) =>
      typeof id === 'string' ? (lookup(id)?.remoteId ?? id) : id;
    const wire = mappingsToJson(parsed.document);
    return {
      tables: parsed.document.tables.map((pair, i) => {
        const out = wire.tables[i]!;
        const leftTable = typeof pair.leftTable === 'string' ? index.table(pair.leftTable) : null;
        const rightTable = typeof pair.rightTable === 'string' ? index.table(pair.rightTable) : null;
        const fields = pair.fields.map((field, j) => {
          const left = typeof field.leftField === 'string' ? index.field(field.leftField) : null;
          const right = typeof field.rightField === 'string' ? index.field(field.rightField) : null;
          const effective = effectiveFieldDirection({
            direction: field.direction ?? pair.direction,
            left,
            right,
            leftTable,
            rightTable,
          });
          const wireField = (out['fields'] as Json[])[j]!;
          return {
            left_field: remote(field.leftField, (id) => index.field(id)),
            right_field: remote(field.rightField, (id) => index.field(id)),
            ...(effective.direction === 'invalid'
              ? { direction: 'invalid' }
              : 'direction' in wireField
                ? { direction: wireField['direction'] }
                : {}),
          };
        });
        const readOnly: Json = {};
        for (const key of READ_ONLY_KEYS) if (stored[i]?.[key] !== undefined) readOnly[key] = stored[i]![key];
        return {
          ...out,
          left_table: remote(pair.leftTable, (id) => index.table(id)),
          right_table: remote(pair.rightTable, (id) => index.table(id)),
          fields,
          ...readOnly,
        };
      }),
    };
  }

  // ---- validate ----

  async validate(auth: AuthContext, syncId: string, body: unknown): Promise<{ issues: ValidationIssue[] }> {
    const loaded = await this.access.load(auth, syncId);
    this.access.requireBothConnected(loaded);
    const candidate = candidateOf(body);
    const document = this.parseOrThrow(
      candidate ?? { tables: (loaded.sync.mappings.tables ?? []) as unknown[] },
    );
    const schema = await this.schemaFor(loaded, document);
    return { issues: validateMappings(document, schema) };
  }

  /** The stored document's validation, for starting the sync. */
  async validateStored(
    loaded: LoadedSync,
  ): Promise<{ document: MappingsDocument; issues: ValidationIssue[] }> {
    this.access.requireBothConnected(loaded);
    const document = this.parseOrThrow({ tables: (loaded.sync.mappings.tables ?? []) as unknown[] });
    return { document, issues: validateMappings(document, await this.schemaFor(loaded, document)) };
  }

  // ---- PUT ----

  async put(
    auth: AuthContext,
    syncId: string,
    body: unknown,
    ifMatch: string | undefined,
  ): Promise<MappingsView> {
    const loaded = await this.access.load(auth, syncId);
    const sides = this.access.requireBothConnected(loaded);
    const { sync } = loaded;
    const lifecycle = { status: sync.status, initialSync: sync.initialSyncPhase, bothSidesConnected: true };
    const allowed = transition(lifecycle, 'put_same_mappings');
    if (!allowed.ok) throw new DomainError(ErrorCode.SyncActive, allowed.message);
    const expected = parseIfMatch(ifMatch);
    if (expected !== null && expected !== sync.mappingsRevision) {
      throw new DomainError(
        ErrorCode.RevisionMismatch,
        staleRevisionMessage('revision', expected, sync.mappingsRevision),
        { current_revision: sync.mappingsRevision },
      );
    }

    // 1. Everything is checked before anything is written.
    const document = this.parseOrThrow(body);
    let schema = await this.schemaFor(loaded, document);
    const issues = validateMappings(document, schema);
    const blocking = putBlockingIssues(issues);
    if (blocking.length > 0) {
      const code = putErrorCode(issues) ?? 'invalid_mappings';
      throw new DomainError(
        code as ErrorCode,
        `The mappings were not saved: ` +
          `${blocking[0]!.message}${blocking.length > 1 ? ` (and ${blocking.length - 1} more)` : ''}`,
        { issues },
      );
    }

    // 2. Create placeholders (adopting objects a previous attempt created), then table setup.
    const resolved = resolveMappings(document, schema);
    const created = await this.runCreates(loaded, sides, resolved.tables);
    if (created) schema = await this.schemaFor(loaded, document);
    const final = resolveMappings(document, schema);
    if (final.issues.length > 0)
      throw new DomainError(
        ErrorCode.CreateFailed,
        `A created object could not be found afterwards: ${final.issues[0]!.message}`,
        { issues: final.issues },
      );
    await this.prepareTables(sides, final.tables);

    // 3. Save with a compare-and-set on the revision; any change returns the sync to draft.
    const stored = this.toStored(final.tables, (sync.mappings.tables ?? []) as StoredPair[]);
    if (canonicalJson(stored) === canonicalJson(sync.mappings.tables ?? [])) {
      return { document: this.render(sync, schema), revision: sync.mappingsRevision };
    }
    const change = transition(lifecycle, 'change_mappings');
    if (!change.ok) throw new DomainError(ErrorCode.SyncActive, change.message);
    if ((await this.mappings.replace(sync.id, stored, sync.mappingsRevision)) === null) {
      const now = await this.syncs.find(sync.id);
      if (now?.status === 'active')
        throw new DomainError(
          ErrorCode.SyncActive,
          'The sync was started while the mappings were being saved; pause it first.',
        );
      throw new DomainError(
        ErrorCode.RevisionMismatch,
        'The mappings changed while this request ran; GET them again and reapply your edit.',
        { current_revision: now?.mappingsRevision ?? null },
      );
    }
    const saved = await this.syncs.get(sync.id);
    return { document: this.render(saved, schema), revision: saved.mappingsRevision };
  }

  // ---- helpers ----

  private parseOrThrow(input: unknown): MappingsDocument {
    const parsed = parseMappings(input);
    if (!parsed.ok) {
      throw new DomainError(
        ErrorCode.InvalidMappings,
        `The mappings document is malformed: ${parsed.issues[0]!.path || '/'}: ${parsed.issues[0]!.message}`,
        { issues: parsed.issues },
      );
    }
    return parsed.document;
  }

  private async loadSchema(loaded: LoadedSync): Promise<MappingsSchema> {
    const sides = this.access.requireBothConnected(loaded);
    const [left, right] = await Promise.all(SIDES.map((side) => this.schema.loadSideSchema(loaded, side)));
    return {
      left: toSideSchema('left', sides.left, left!.tables, this.catalog),
      right: toSideSchema('right', sides.right, right!.tables, this.catalog),
    };
  }

  /**
   * The schema with the fields of every table the document references fetched (spec 4.4: fetched during the
   * call).
   */
  private async schemaFor(loaded: LoadedSync, document: MappingsDocument): Promise<MappingsSchema> {
    const schema = await this.loadSchema(loaded);
    const resolved = resolveMappings(document, schema);
    const missing: SchemaTable[] = [];
    for (const pair of resolved.tables) {
      for (const end of [pair.left, pair.right]) {
        const table = end.kind === 'existing' ? end.table : end.kind === 'create' ? end.adopts : null;
        if (table && table.fields === null && !missing.includes(table)) missing.push(table);
      }
    }
    return this.withFields(loaded, schema, missing);
  }

  /**
   * Both sides' schemas with the fields of the named tables (remote ids per side) fetched, for an editor that
   * shows the fields of tables a person is choosing before any document references them (the console's
   * mappings editor). Names that are no table on that side are ignored.
   */
  async schemaWith(loaded: LoadedSync, tables: Record<SideName, string[]>): Promise<MappingsSchema> {
    const schema = await this.loadSchema(loaded);
    const missing = SIDES.flatMap((side) =>
      schema[side].tables.filter((t) => t.fields === null && tables[side].includes(t.remoteId)),
    );
    return this.withFields(loaded, schema, missing);
  }

  private async withFields(
    loaded: LoadedSync,
    schema: MappingsSchema,
    missing: SchemaTable[],
  ): Promise<MappingsSchema> {
    if (missing.length === 0) return schema;
    const entities = await this.tables.tablesByIds(missing.map((t) => t.id));
    for (const entity of entities) await this.schema.ensureFields(loaded, entity);
    return this.loadSchema(loaded);
  }

  /** Runs the create placeholders side by side; true when something was created. */
  private async runCreates(
    loaded: LoadedSync,
    sides: Record<SideName, SyncSideEntity>,
    pairs: ResolvedTablePair[],
  ): Promise<boolean> {
    let createdAny = false;
    for (const side of SIDES) {
      const work = pairs.filter(
        (pair) =>
          pair[side].kind === 'create' ||
          pair.fields.some(
            (field) => field[side].kind === 'create' && (field[side] as { adopts: unknown }).adopts === null,
          ),
      );
      if (work.length === 0) continue;
      const touched: string[] = [];
      const other = side === 'left' ? 'right' : 'left';
      const links = linkTargets(pairs, side);
      await this.connections.withSide(sides[side], async (connection) => {
        for (const pair of work) {
          const end = pair[side];
          const specs = (fields: ResolvedTablePair['fields']) =>
            fields
              .filter(
                (field) =>
                  field[side].kind === 'create' && (field[side] as { adopts: unknown }).adopts === null,
              )
              .map((field) =>
                fieldSpec((field[side] as { name: string }).name, counterpartOf(field[other]), links),
              );
          if (end.kind === 'create' && end.adopts === null) {
            const table = await createOrFail(
              () => connection.createTable(end.name, specs(pair.fields)),
              side,
              `table "${end.name}"`,
            );
            const source = existingTable(pair[other]);
            if (source) links.set(source.remoteId, table.remoteId);
            touched.push(table.remoteId);
          } else {
            const table = end.kind === 'existing' ? end.table : end.kind === 'create' ? end.adopts! : null;
            if (!table) continue;
            for (const spec of specs(pair.fields))
              await createOrFail(
                () => connection.createField(table.remoteId, spec),
                side,
                `field "${spec.name}" in "${table.name}"`,
              );
            touched.push(table.remoteId);
          }
        }
      });
      for (const remoteId of new Set(touched))
        await this.schema.refreshTableAfterCreate(loaded, side, remoteId);
      createdAny = createdAny || touched.length > 0;
    }
    return createdAny;
  }

  /**
   * Table setup for every mapped table: the service id column on every table (also one with a single-column
   * primary key, so retried creates are idempotent); `table_setup_failed` with the app's reason.
   */
  private async prepareTables(
    sides: Record<SideName, SyncSideEntity>,
    pairs: ResolvedTablePair[],
  ): Promise<void> {
    for (const side of SIDES) {
      const tables = pairs
        .map((pair) => existingTable(pair[side]))
        .filter((table): table is SchemaTable => table !== null);
      if (tables.length === 0) continue;
      await this.connections.withSide(sides[side], async (connection: Connection) => {
        for (const table of tables) {
          try {
            await connection.prepareTable(table.remoteId, { changeCapture: false, serviceIdColumn: true });
          } catch (error) {
            if (!isConnectorError(error) || error.kind === 'transient') throw error;
            throw new DomainError(
              ErrorCode.TableSetupFailed,
              `The ${side} table "${table.name}" could not be prepared: ${error.message}`,
              { side, table: table.remoteId },
            );
          }
        }
      });
      await this.tables.markPrepared(
        tables.map((t) => t.id),
        new Date(),
      );
    }
  }

  /** The stored form: references as prefixed ids; read-only parts carried over from the same table pair. */
  private toStored(pairs: ResolvedTablePair[], previous: StoredPair[]): StoredPair[] {
    const idOf = (end: ResolvedTable) => {
      const table = existingTable(end);
      if (!table) throw new Error('unresolved table after creates');
      return table.id;
    };
    const fieldId = (end: ResolvedField) => {
      const field = counterpartOf(end);
      if (!field) throw new Error('unresolved field after creates');
      return field.id;
    };
    const document: MappingsDocument = {
      tables: pairs.map((pair) => ({
        ...pair.pair,
        leftTable: idOf(pair.left),
        rightTable: idOf(pair.right),
        fields: pair.fields.map((field) => ({
          ...field.pair,
          leftField: fieldId(field.left),
          rightField: fieldId(field.right),
        })),
      })),
    };
    return mappingsToJson(document).tables.map((table) => {
      const stored = table as StoredPair;
      const before = previous.find(
        (p) => p.left_table === stored.left_table && p.right_table === stored.right_table,
      );
      for (const key of READ_ONLY_KEYS) if (before?.[key] !== undefined) (stored as Json)[key] = before[key];
      return stored;
    });
  }
}

/** The table a resolved reference stands for: the existing one, or the one a create adopts (or made). */
function existingTable(end: ResolvedTable): SchemaTable | null {
  if (end.kind === 'existing') return end.table;
  if (end.kind === 'create') return end.adopts;
  return null;
}

function counterpartOf(end: ResolvedField): SchemaField | null {
  if (end.kind === 'existing') return end.field;
  if (end.kind === 'create' && end.adopts) return end.adopts;
  return null;
}

/**
 * For the tables of `side`: the other side's table remote id -> this side's table it is mapped to, for pairs
 * whose tables both exist (tables created by these mappings are added as they are created, in pair order).
 */
function linkTargets(pairs: ResolvedTablePair[], side: SideName): Map<string, string> {
  const links = new Map<string, string>();
  for (const pair of pairs) {
    const here = existingTable(pair[side]);
    const there = existingTable(pair[side === 'left' ? 'right' : 'left']);
    if (here && there) links.set(there.remoteId, here.remoteId);
  }
  return links;
}

/** A relation to a mapped table keeps its target as this side's table (a record link where supported). */
function fieldSpec(name: string, counterpart: SchemaField | null, links: Map<string, string>): FieldSpec {
  if (!counterpart)
    throw new DomainError(
      ErrorCode.CreateFailed,
      `The field "${name}" cannot be created: its counterpart is a create too, so there is no type to copy.`,
    );
  const target = counterpart.typeDetails?.['target_table'];
  const type = createdFieldType(counterpart, typeof target === 'string' ? (links.get(target) ?? null) : null);
  return {
    name,
    typeClass: type.typeClass,
    sourceType: counterpart.type,
    typeDetails: type.typeDetails,
    required: false,
    primary: false,
  };
}

async function createOrFail<T>(create: () => Promise<T>, side: SideName, what: string): Promise<T> {
  try {
    return await create();
  } catch (error) {
    if (!isConnectorError(error) || error.kind === 'transient' || error.kind === 'auth') throw error;
    throw new DomainError(
      ErrorCode.CreateFailed,
      `The ${side} app refused to create ${what}: ${error.message}`,
      { side },
    );
  }
}

/** `If-Match`: the revision as `"3"`, `W/"3"` or `3`; `*` or absent means no check. */
export function parseIfMatch(header: string | undefined): number | null {
  if (header === undefined || header.trim() === '' || header.trim() === '*') return null;
  const match = /^\s*(?:W\/)?"?(\d{1,9})"?\s*$/.exec(header);
  if (!match)
    throw new DomainError(
      ErrorCode.RevisionMismatch,
      `If-Match "${header}" is not a revision this API issued; send the ETag of GET /mappings.`,
    );
  return Number(match[1]);
}

/** The validate body: empty, `{mappings: document}` or a bare document. */
function candidateOf(body: unknown): unknown {
  if (body === undefined || body === null) return null;
  if (typeof body !== 'object' || Array.isArray(body)) return body;
  const object = body as Json;
  if (Object.keys(object).length === 0) return null;
  if ('mappings' in object) return object['mappings'];
  return object;
}
