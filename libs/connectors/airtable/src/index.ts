export { airtableConnector } from './declaration';
export { AIRTABLE_ERROR_KINDS, AIRTABLE_ERRORS, translateAirtableError } from './errors';
export { AirtableConnection } from './connection';
export { API_URL_SETTING, DEFAULT_API_URL } from './credentials';
