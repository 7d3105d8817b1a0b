/**
 * Ids and their prefixes live in `@lockstep/domain` (server code imports them from there); they are
 * re-exported here so a client of the API keeps importing them from its one package.
 */
export { ID_PREFIX, type IdKind, isId, newId } from '@lockstep/domain';
