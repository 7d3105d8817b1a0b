// The REST API's request and response bodies: class-validator rules and @ApiProperty metadata live on the
// classes, so the API's validation and its OpenAPI document come from here, and a client of the API can
// import the same types.
export * from './connector.dto';
export * from './issues.dto';
export * from './live-export.dto';
export * from './mappings.dto';
export * from './operations.dto';
export * from './pending-deletes.dto';
export * from './records.dto';
export * from './schema.dto';
export * from './sync.dto';
export * from './input-rules';
