export { nocodbConnector } from './declaration';
export { NOCODB_ERROR_KINDS, NOCODB_ERRORS, translateNocodbError } from './errors';
export { NocodbConnection } from './connection';
export { channelOf, signalChannel } from './change-capture';
