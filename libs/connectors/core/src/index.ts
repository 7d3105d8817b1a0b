export * from './connector';
export * from './errors';
export * from './egress';
export * from './redact';
