export * from './budget';
export * from './client';
export * from './errors';
export * from './oauth';
export * from './pagination';
export * from './retry';
export * from './signals';
export * from './hooks';
