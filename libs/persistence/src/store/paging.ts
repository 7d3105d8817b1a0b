/**
 * Keyset pages, newest first: a page continues after the creation time (ISO, microseconds: the API's cursor
 * carries it as text so no precision is lost) and id of the last row shown.
 */
export interface PagePosition {
  createdAt: string;
  id: string;
}

/** A page row: the id and its ISO creation time as the keyset key. */
export interface PageKey {
  id: string;
  key: string;
}
