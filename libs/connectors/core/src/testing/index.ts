/**
 * Test helpers for connector packages (`@lockstep/connectors-core/testing`): the contract suite every
 * connector runs against a real server, its harness types and the canonical samples. Import from spec files
 * only; it pulls in `@jest/globals`.
 */
export * from './harness';
export * from './samples';
export * from './poll';
export * from './contract-suite';
export * from './by-name';
