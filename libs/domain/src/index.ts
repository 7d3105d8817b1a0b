export * from './types/type-class';
export * from './ids';
export * from './plans';
export * from './lifecycle';
export * from './conversion';
export * from './mappings';
export * from './engine';
export * from './live-export';
