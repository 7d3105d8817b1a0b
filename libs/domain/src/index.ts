export * from './types/type-class';
export * from './plans';
export * from './lifecycle';
