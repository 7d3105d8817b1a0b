export * from './schema';
export * from './issues';
export * from './directions';
export * from './document';
export * from './resolve';
export * from './validate';
export * from './put';
