export { mysqlConnector, openMysqlConnection, CONNECTION_STRING_FIELD } from './declaration';
export {
  MysqlConnection,
  SYSTEM_DATABASES,
  DEFAULT_CHANGE_LOG_SETTINGS,
  type ChangeLogSettings,
} from './connection';
export {
  translateMysqlError,
  errorKindOf,
  ERROR_KIND_BY_CODE,
  ERROR_KIND_BY_ERRNO,
  ERROR_KIND_BY_SQLSTATE_CLASS,
  type ServerFlavor,
} from './errors';
export { CHANGE_LOG_TABLE, SERVICE_ID_COLUMN } from './catalog';
export { EXPORT_LOG_TABLE } from './export-capture';
