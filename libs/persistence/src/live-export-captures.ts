/**
 * Shared by the API's delete and the worker (table `live_export_captures`, see its migration).
 *
 * RELEASE_CAPTURES_SQL runs in the API's delete transaction, before the export row goes: every capture of the
 * export is released, carrying the source connector, base and sealed credentials (still bound to the export's
 * source, `liveExportOwner`), so the worker can reach the source and remove the capture afterwards.
 */
export const RELEASE_CAPTURES_SQL = `UPDATE live_export_captures c SET released_at = now(), connector = e.source_connector,
  base = coalesce(e.plan->'source'->>'base', e.source_base), credentials = e.source_credentials
  FROM live_exports e WHERE e.id = $1 AND c.live_export_id = e.id AND c.released_at IS NULL`;
