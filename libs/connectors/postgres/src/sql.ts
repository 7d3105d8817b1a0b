/** Identifier quoting and small SQL helpers (values always travel as parameters, never in the SQL text). */

export function ident(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

export function qualified(schema: string, name: string): string {
  return `${ident(schema)}.${ident(name)}`;
}

/** PostgreSQL keeps at most 63 bytes of an identifier and silently truncates the rest. */
export const MAX_IDENTIFIER_BYTES = 63;

export function identifierTooLong(name: string): boolean {
  return Buffer.byteLength(name, 'utf8') > MAX_IDENTIFIER_BYTES;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/**
 * Parses PostgreSQL's text form of an array (`{1,2,NULL}`, `{"a b","c\"d"}`, `[0:1]={1,2}`, nested
 * `{{1,2},{3,4}}`) into strings and nulls. Elements are left as text for the caller to decode.
 */
export type ArrayText = (string | null | ArrayText)[];

export function parseArrayLiteral(text: string): ArrayText {
  let position = text.startsWith('[') ? text.indexOf('=') + 1 : 0;
  const fail = (): never => {
    throw new Error(`malformed array literal: ${text.slice(0, 60)}`);
  };
  const parseArray = (): ArrayText => {
    if (text[position] !== '{') fail();
    position += 1;
    const items: ArrayText = [];
    if (text[position] === '}') {
      position += 1;
      return items;
    }
    for (;;) {
      if (text[position] === '{') {
        items.push(parseArray());
      } else if (text[position] === '"') {
        position += 1;
        let value = '';
        while (position < text.length && text[position] !== '"') {
          if (text[position] === '\\') position += 1;
          value += text[position];
          position += 1;
        }
        if (position >= text.length) fail();
        position += 1;
        items.push(value);
      } else {
        const start = position;
        while (position < text.length && text[position] !== ',' && text[position] !== '}') position += 1;
        const raw = text.slice(start, position).trim();
        items.push(raw.toUpperCase() === 'NULL' ? null : raw);
      }
      const separator = text[position];
      position += 1;
      if (separator === '}') return items;
      if (separator !== ',') fail();
    }
  };
  const result = parseArray();
  if (position !== text.length) fail();
  return result;
}
