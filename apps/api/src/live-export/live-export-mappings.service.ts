import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import {
  DomainError,
  ErrorCode,
  type ExportValidationResultDto,
  type SavedTableDto,
  type SaveDto,
} from '@lockstep/contracts';
import {
  type Connection,
  type ExportColumnExpectation,
  exportStructureProblems,
  isConnectorError,
} from '@lockstep/connectors-core';
import {
  buildLiveExportPlan,
  type ExportSourceField,
  type LiveExportIssue,
  type LiveExportMappingsDocument,
  type LiveExportMappingsInput,
  type LiveExportPlan,
  type LiveExportValidationContext,
  parseLiveExportMappings,
  validateLiveExportMappings,
} from '@lockstep/domain';
import { type LiveExportEntity, LiveExportStore } from '@lockstep/persistence';
import type { AuthContext } from '../common/auth/auth-context';
import { canonicalJson } from '../common/idempotency/idempotency.interceptor';
import { staleRevisionMessage } from '../common/http/if-match';
import { LiveExportAccess, LiveExportLinks } from './live-export-access';
import { LiveExportConnections } from './live-export-connections';
import { LiveExportSchemaService } from './live-export-schema.service';
import { planTablesDto, toSaveDto } from './live-export.mapper';

export interface MappingsView {
  document: LiveExportMappingsDocument;
  version: number;
}

/** Issue code -> the error a refused PUT or save answers with (each is a 7.2 code of the same name). */
const ISSUE_ERRORS: Record<Exclude<LiveExportIssue['code'], 'auth_required' | 'internal'>, ErrorCode> = {
  unknown_source_table: ErrorCode.UnknownSourceTable,
  unknown_source_field: ErrorCode.UnknownSourceField,
  duplicate_source_table: ErrorCode.DuplicateSourceTable,
  duplicate_destination_table: ErrorCode.DuplicateDestinationTable,
  duplicate_field_name: ErrorCode.DuplicateFieldName,
  multiple_primary_fields: ErrorCode.MultiplePrimaryFields,
  empty_table_mapping: ErrorCode.EmptyTableMapping,
  existing_field_not_supported: ErrorCode.ExistingFieldNotSupported,
  applied_table_not_editable: ErrorCode.AppliedTableNotEditable,
};

/** `If-Match`: the version as `"3"`, `W/"3"` or `3`; required on the live export mappings PUT. */
export function parseRequiredIfMatch(header: string | undefined): number {
  if (header === undefined || header.trim() === '') {
    throw new DomainError(
      ErrorCode.InvalidRequest,
      'The live export mappings PUT needs `If-Match` with the `ETag` of GET .../mappings (compare-and-set).',
    );
  }
  const match = /^\s*(?:W\/)?"?(\d{1,9})"?\s*$/.exec(header);
  if (!match)
    throw new DomainError(
      ErrorCode.RevisionMismatch,
      `If-Match "${header.slice(0, 100)}" is not a version this API issued; send the ETag of GET ` +
        `.../mappings.`,
    );
  return Number(match[1]);
}

function storedDocument(entity: LiveExportEntity): LiveExportMappingsDocument {
  return { tables: entity.mappings.tables ?? [] };
}

/**
 * The mappings document (GET with ETag, PUT with If-Match, validate) and save (validate again, provision the
 * destination through the connector's live export layer, then record the plan). Rules and codes:
 * `libs/domain/src/live-export/mappings.ts`.
 */
@Injectable()
export class LiveExportMappingsService {
  private readonly logger = new Logger('LiveExportMappings');

  private readonly exports: LiveExportStore;

  constructor(
    @InjectDataSource() dataSource: DataSource,
    private readonly access: LiveExportAccess,
    private readonly connections: LiveExportConnections,
    private readonly schema: LiveExportSchemaService,
    private readonly links: LiveExportLinks,
  ) {
    this.exports = new LiveExportStore(dataSource.manager);
  }

  async get(auth: AuthContext, id: string): Promise<MappingsView> {
    const { entity } = await this.access.load(auth, id, 'read');
    return { document: storedDocument(entity), version: entity.mappingsVersion };
  }

  async put(
    auth: AuthContext,
    id: string,
    body: unknown,
    ifMatch: string | undefined,
    idempotencyKey: string | undefined,
  ): Promise<MappingsView> {
    const { entity } = await this.access.load(auth, id, 'write');
    if (idempotencyKey !== undefined) {
      throw new DomainError(
        ErrorCode.InvalidRequest,
        'The live export mappings PUT does not take `Idempotency-Key`: it is a compare-and-set on ' +
          '`If-Match`, so a retry is already safe (a repeated PUT with a now stale If-Match answers ' +
          '412).',
      );
    }
    const expected = parseRequiredIfMatch(ifMatch);
    if (expected !== entity.mappingsVersion) {
      throw new DomainError(
        ErrorCode.RevisionMismatch,
        staleRevisionMessage('version', expected, entity.mappingsVersion),
        { current_version: entity.mappingsVersion },
      );
    }
    const input = this.parseOrThrow(body);
    this.schema.requireConnected(entity, 'source');

    const { document, issues } = await this.check(entity, input);
    this.refuse(issues);
    if (canonicalJson(document) === canonicalJson(storedDocument(entity)))
      return { document, version: entity.mappingsVersion };
    if (!(await this.exports.replaceMappings(entity.id, expected, document))) {
      const now = await this.exports.find(entity.id);
      throw this.mismatch(now?.mappingsVersion ?? null);
    }
    return { document, version: expected + 1 };
  }

  /**
   * Side-effect free: `{valid, issues}`; a failure of validation itself is the issue `internal`, never a 500.
   */
  async validate(auth: AuthContext, id: string, body: unknown): Promise<ExportValidationResultDto> {
    const { entity } = await this.access.load(auth, id, 'read');
    const candidate = candidateOf(body);
    const input = candidate === null ? storedDocument(entity) : this.parseOrThrow(candidate);
    const issues: LiveExportIssue[] = [];
    for (const side of ['source', 'destination'] as const) {
      const connected =
        side === 'source' ? entity.sourceCredentials !== null : entity.destinationCredentials !== null;
      if (!connected)
        issues.push({
          code: 'auth_required',
          message:
            `The live export's ${side} is not connected yet; a person connects it (see the live ` +
            `export's pending_actions).`,
          path: null,
        });
    }
    if (entity.sourceCredentials !== null) {
      try {
        issues.push(...(await this.check(entity, input)).issues);
      } catch (error) {
        if (!(error instanceof DomainError))
          this.logger.error({ err: error, liveExport: entity.id }, 'live export validation failed');
        const reason = error instanceof DomainError ? error.message : 'an unexpected error';
        issues.push({
          code: 'internal',
          message: `Validation could not finish (${reason}); retry.`,
          path: null,
        });
      }
    }
    return { valid: issues.length === 0, issues };
  }

  async lastSave(auth: AuthContext, id: string): Promise<SaveDto> {
    const { entity } = await this.access.load(auth, id, 'read');
    if (entity.savedVersion === null || !entity.plan)
      throw new DomainError(
        ErrorCode.NotFound,
        `Live export ${entity.id} was never saved; POST .../save provisions the destination.`,
      );
    return toSaveDto(entity, entity.plan, this.links);
  }

  async save(auth: AuthContext, id: string): Promise<SaveDto> {
    const { entity } = await this.access.load(auth, id, 'write');
    this.schema.requireConnected(entity, 'source');
    this.schema.requireConnected(entity, 'destination');
    const location = entity.destinationLocation;
    if (!location)
      throw new DomainError(
        ErrorCode.InvalidLocation,
        'Choose the destination location first (PATCH the live export with `destination.location`; ' +
          'GET .../destination/locations lists them).',
        { side: 'destination' },
      );
    const input = storedDocument(entity);
    if (input.tables.length === 0)
      throw new DomainError(
        ErrorCode.EmptyMappings,
        'Nothing is mapped: PUT a mappings document with at least one table before saving.',
      );

    // 1. Validate against the apps as they are now (the destination is always inspected here).
    const { document, issues, sourceFields } = await this.check(entity, input, true);
    this.refuse(issues);
    const plan = buildLiveExportPlan(
      document,
      { sourceFields },
      {
        source: { connector: entity.sourceConnector, base: entity.sourceBase },
        destination: { connector: entity.destinationConnector, location },
      },
    );

    // 2. Provision: create the tables and columns (idempotent; never drops), then check what the runs need.
    const tables = await this.provisionTables(entity, plan, location);

    // 3. Record the plan. An older concurrent save never overwrites a newer one.
    await this.exports.recordPlan(entity.id, plan, entity.mappingsVersion);
    const saved = await this.exports.get(entity.id);
    return toSaveDto(saved, saved.plan ?? plan, this.links, tables);
  }

  // ---- helpers ----

  /**
   * Creates the plan's tables and columns in the destination (idempotent; never drops) and checks that each
   * holds what the runs need; returns what was created per table.
   */
  private async provisionTables(
    entity: LiveExportEntity,
    plan: LiveExportPlan,
    location: string,
  ): Promise<SavedTableDto[]> {
    const tables: SavedTableDto[] = planTablesDto(plan);
    await this.connections.withDestination(
      entity,
      async (connection) => {
        const target = this.target(connection);
        // Before touching anything: an existing table must already be writable by the export (the hidden
        // columns in place, not a view, the columns it keeps still of a compatible type). Someone else's
        // table is refused.
        for (const table of plan.tables) {
          const info = await target.inspectExportTable(table.destinationTable);
          if (!info) continue;
          const present = new Set(info.columns.map((column) => column.name.toLowerCase()));
          const kept = table.columns
            .filter((column) => present.has(column.column.toLowerCase()))
            .map((column) => ({ column: column.column, sourceClass: column.typeClass }));
          this.refuseStructure(
            table.destinationTable,
            exportStructureProblems(info, table.destinationTable, kept),
          );
        }
        for (const [i, table] of plan.tables.entries()) {
          const result = await this.provision(() =>
            target.provisionExportTable({
              name: table.destinationTable,
              columns: table.columns.map((column) => ({
                name: column.column,
                typeClass: column.typeClass,
                sourceType: column.sourceType,
                typeDetails: column.typeDetails ?? null,
              })),
            }),
          );
          const expectations: ExportColumnExpectation[] = table.columns.map((column) => ({
            column: column.column,
            sourceClass: column.typeClass,
          }));
          this.refuseStructure(
            table.destinationTable,
            exportStructureProblems(result.table, table.destinationTable, expectations),
          );
          tables[i] = { ...tables[i]!, created: result.created, added_columns: result.addedColumns };
        }
      },
      location,
    );
    return tables;
  }

  /**
   * Loads what validation needs from the apps: the source tables and the fields of the referenced ones, and
   * (when the destination is connected and has a location) the destination tables the document names.
   */
  private async check(entity: LiveExportEntity, input: LiveExportMappingsInput, requireDestination = false) {
    const { sourceTables, sourceFields } = await this.connections.withSource(entity, async (connection) => {
      const tables = await connection.listTables();
      const wanted = new Set(input.tables.map((table) => table.source_table));
      const fields = new Map<string, ExportSourceField[]>();
      for (const table of tables) {
        if (!wanted.has(table.remoteId) && !wanted.has(table.name)) continue;
        fields.set(table.remoteId, await connection.listFields(table.remoteId));
      }
      return {
        sourceTables: tables.map((table) => ({ remoteId: table.remoteId, name: table.name })),
        sourceFields: fields,
      };
    });
    const location = entity.destinationLocation;
    const applied: LiveExportPlan | null =
      entity.plan && location && entity.plan.destination.location === location ? entity.plan : null;
    const context: LiveExportValidationContext = {
      sourceTables,
      sourceFields,
      destinationTables: null,
      applied,
    };
    const first = validateLiveExportMappings(input, context);
    if (entity.destinationCredentials === null || !location) return { ...first, sourceFields };

    const names = [...new Set(first.document.tables.map((table) => table.destination_table))];
    const destinationTables = await this.connections.withDestination(entity, async (connection) => {
      if (!connection.liveExport) {
        if (requireDestination) this.target(connection);
        return null;
      }
      const found = new Map<string, { columns: string[] }>();
      for (const name of names) {
        const info = await connection.liveExport.inspectExportTable(name);
        if (info) found.set(name, { columns: info.columns.map((column) => column.name) });
      }
      return found;
    });
    return { ...validateLiveExportMappings(input, { ...context, destinationTables }), sourceFields };
  }

  private refuseStructure(table: string, problems: string[]): void {
    if (problems.length === 0) return;
    throw new DomainError(
      ErrorCode.LiveExportInvalidStructure,
      `Destination table "${table}" cannot be written by the export: ${problems.join('; ')}. Restore ` +
        `it, or export into another destination_table.`,
      { table, problems },
    );
  }

  private target(connection: Connection) {
    if (!connection.liveExport)
      throw new DomainError(
        ErrorCode.ConnectorNotSupported,
        `The ${connection.type} connector cannot be a live export destination.`,
        { side: 'destination', connector: connection.type },
      );
    return connection.liveExport;
  }

  /**
   * Connector refusals while creating tables: the app's reason, as `unprocessable` (a name or type it will
   * not take).
   */
  private async provision<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (isConnectorError(error) && (error.kind === 'invalid_data' || error.kind === 'unsupported')) {
        throw new DomainError(
          ErrorCode.Unprocessable,
          `The destination refused to create the export's tables: ${error.message}`,
          { side: 'destination', connector_error: error.kind },
        );
      }
      throw error;
    }
  }

  private parseOrThrow(body: unknown): LiveExportMappingsInput {
    const parsed = parseLiveExportMappings(body);
    if (!parsed.ok) {
      throw new DomainError(
        ErrorCode.InvalidMappings,
        `The mappings document is malformed: ` +
          `${parsed.problems.map((p) => `${p.path || '(document)'}: ${p.message}`).join('; ')}`,
        { issues: parsed.problems },
      );
    }
    return parsed.document;
  }

  /** Any issue refuses the write: the first one's code, every issue in `details.issues`. */
  private refuse(issues: LiveExportIssue[]): void {
    const first = issues[0];
    if (!first) return;
    const code =
      first.code === 'auth_required'
        ? ErrorCode.AuthRequired
        : first.code === 'internal'
          ? ErrorCode.Internal
          : ISSUE_ERRORS[first.code];
    throw new DomainError(
      code,
      issues.length === 1
        ? first.message
        : `${first.message} (and ${issues.length - 1} more issue${issues.length > 2 ? 's' : ''}; see ` +
            `details.issues)`,
      { issues },
    );
  }

  private mismatch(current: number | null): DomainError {
    return new DomainError(
      ErrorCode.RevisionMismatch,
      `The mappings changed while this request ran: the current version is ${current ?? 'unknown'}. ` +
        `GET them again and reapply your edit.`,
      { current_version: current },
    );
  }
}

/** The validate body: empty (the stored document), `{mappings: document}` or a bare document. */
function candidateOf(body: unknown): unknown {
  if (body === undefined || body === null) return null;
  if (typeof body === 'object' && !Array.isArray(body)) {
    const keys = Object.keys(body);
    if (keys.length === 0) return null;
    if (keys.length === 1 && keys[0] === 'mappings') return (body as { mappings: unknown }).mappings;
  }
  return body;
}
