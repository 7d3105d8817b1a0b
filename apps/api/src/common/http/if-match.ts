/**
 * The 412 for an `If-Match` that is not the current revision. It names both and claims no change: the
 * given one may be older, or one this API never issued.
 */
export function staleRevisionMessage(what: 'revision' | 'version', given: number, current: number): string {
  return (
    `If-Match "${given}" is not the current ${what} of the mappings; the current ${what} is ${current} ` +
    `(ETag "${current}"). GET the mappings, reapply your edit to that document and send its ETag.`
  );
}
