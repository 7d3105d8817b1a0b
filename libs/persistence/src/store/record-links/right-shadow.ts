/**
 * How `record_links.right_shadow` is stored (private to persistence: the store's index does not export it).
 */

/**
 * A right shadow stored as this JSON text means "the same values as the left shadow" (see `insertLinks`):
 * after an initial create between two tables with the same field names and representations, both sides show
 * the same values, and storing them once saves the store one copy of them per record (in the heap, the WAL
 * and again when the page is evicted). Shadows are always objects, so a JSON string cannot be a real one.
 * Every reader goes through `LINK_COLUMNS` (which resolves it in SQL), and a statement that clears the left
 * shadow resolves it first. Private to this package: the store's index does not export this file.
 */
export const SAME_AS_LEFT = '"="';

/** The right shadow as the engine reads it: `SAME_AS_LEFT` resolved to the left shadow. */
export const RIGHT_SHADOW = `
  CASE WHEN right_shadow::text = '${SAME_AS_LEFT}' THEN left_shadow ELSE right_shadow END`;
