import type { TypeClass } from '../types/type-class';

/**
 * What a live export's runs execute: written by save (`POST /live-export/live-exports/{id}/save`) from the
 * validated mappings document and the source schema at that moment, stored in `live_exports.plan`. A run
 * never reads the edited mappings document, only the plan of the last save.
 *
 * `sourceTable` and `sourceField` are the source's remote ids; `destinationTable` and `column` are the names
 * in the destination location (a PostgreSQL schema or a MySQL database). Each destination table also carries
 * the two hidden columns `lockstep_source_id` and `lockstep_row_hash` (see the connector export layer).
 */
export interface LiveExportPlan {
  source: { connector: string; base: string | null };
  destination: { connector: string; location: string };
  tables: LiveExportPlanTable[];
}

export interface LiveExportPlanTable {
  /** Source table remote id. */
  sourceTable: string;
  /** Table name in the destination location. */
  destinationTable: string;
  columns: LiveExportPlanColumn[];
}

export interface LiveExportPlanColumn {
  /** Source field remote id. */
  sourceField: string;
  /** Column name in the destination table. */
  column: string;
  typeClass: TypeClass;
  /** The source's own type name, so the destination picks the closest native type. */
  sourceType?: string;
  typeDetails?: Record<string, unknown> | null;
  /**
   * The field a person marked as the table's primary field (informative; rows are keyed by
   * `lockstep_source_id`).
   */
  primary?: boolean;
}
