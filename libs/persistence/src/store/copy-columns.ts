/** `copyIn`'s `plain` flags: per column, whether it is one of `unescaped`. */
export function plainColumns(columns: readonly string[], unescaped: readonly string[]): boolean[] {
  return columns.map((column) => unescaped.includes(column));
}
