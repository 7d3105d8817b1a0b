export { copyText, isCopyNull, splitCopyLine, unescapeCopy } from './text-format';
export { copyBuffer, copyIn, CopyInQuery, type PgClientLike } from './copy-in';
export { copyOut, CopyOutQuery, type PgPoolLike, type PgPooledClient } from './copy-out';
