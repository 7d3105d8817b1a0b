export * from './plan';
export * from './availability';
export * from './mappings';
export * from './schedule';
