export * from './merge';
export * from './deletes';
export * from './filters';
export * from './pair-rules';
export * from './decide';
