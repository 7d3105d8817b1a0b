export * from './connector';
export * from './errors';
export * from './egress';
export * from './redact';
export * from './metadata-cache';
export * from './live-export';
export * from './coordination';
