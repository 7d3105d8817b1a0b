export * from './errors';
export * from './ids';
export * from './scopes';
export * from './pagination';
export * from './dto';
