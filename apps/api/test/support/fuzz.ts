/**
 * Fuzz requests for one operation of the served OpenAPI document: path parameters, query strings, headers
 * and bodies drawn from the operation's schemas, then broken in the ways clients break them (wrong types,
 * nulls, missing and unknown properties, NUL and control characters, 100 KB strings, deep JSON, wrong
 * content types and encodings, malformed ids). Every request prints itself shortly for a failure report.
 */
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import fc from 'fast-check';

type Json = unknown;
type Schema = Record<string, unknown>;

export interface OpenApiOperation {
  method: string;
  path: string;
  parameters: { in: string; name: string; required?: boolean; schema?: Schema }[];
  bodySchema: Schema | null;
}

export interface FuzzRequest {
  method: string;
  /** Path and query exactly as sent (already percent-encoded, or deliberately not). */
  url: string;
  headers: Record<string, string>;
  body: Buffer | null;
  /** How the request was made, for the failure report. */
  note: string;
}

/** Known-good values the generators start from: fixture ids by path parameter name, bodies by operation. */
export interface FuzzFixtures {
  pathValues: Record<string, string[]>;
  queryValues: Record<string, string[]>;
  bodies: Record<string, Json[]>;
  apiKey: string;
}

export const operationKey = (operation: { method: string; path: string }) =>
  `${operation.method.toUpperCase()} ${operation.path}`;

/** Every operation of the document, with `$ref`-free parameters. */
export function operationsOf(document: {
  paths: Record<string, Record<string, Schema>>;
}): OpenApiOperation[] {
  return Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => {
      const content = (
        operation['requestBody'] as { content?: Record<string, { schema?: Schema }> } | undefined
      )?.content;
      return {
        method: method.toUpperCase(),
        path,
        parameters: (operation['parameters'] as OpenApiOperation['parameters'] | undefined) ?? [],
        bodySchema: content?.['application/json']?.schema ?? null,
      };
    }),
  );
}

// ---- nasty values -------------------------------------------------------------------------------------

const HUNDRED_KB = 'x'.repeat(100 * 1024);

/** Strings that have broken services before, and strings nobody thought of. */
export const nastyString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    'a\u0000b',
    '\u0000',
    'a\u0001\u0007\u001b[31m\u007f\u0085b',
    'line\nbreak\r\ttab',
    HUNDRED_KB,
    '\ud800',
    'x\udfffy',
    '😀'.repeat(100),
  ),
  fc.constantFrom(
    '',
    ' ',
    '  trailing ',
    '../../etc/passwd',
    "'; DROP TABLE syncs; --",
    '`x`',
    '"quoted"',
    '%00',
    '\u202eevil',
    '{{x}}',
    '${x}',
  ),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 300 }),
);

const wrongType: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom(null, true, false, 0, -1, 1.5, 1e308, -0, '', [], {}, [null], { '': null }),
  fc.integer(),
  nastyString,
  fc.jsonValue({ maxDepth: 2 }),
);

/** JSON text nested `depth` levels deep (built as text: no recursion anywhere). */
export const deepJson = (depth: number, kind: 'object' | 'array' = 'object') =>
  kind === 'array'
    ? `${'['.repeat(depth)}${']'.repeat(depth)}`
    : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

// ---- values from schemas --------------------------------------------------------------------------------

function resolve(schema: Schema | undefined, components: Record<string, Schema>): Schema {
  let current = schema ?? {};
  for (let hops = 0; typeof current['$ref'] === 'string' && hops < 10; hops += 1) {
    current = components[String(current['$ref']).split('/').pop() as string] ?? {};
  }
  const allOf = current['allOf'] as Schema[] | undefined;
  return allOf?.length ? { ...current, ...resolve(allOf[0], components), allOf: undefined } : current;
}

function typesOf(schema: Schema): string[] {
  const type = schema['type'];
  if (Array.isArray(type)) return type as string[];
  if (typeof type === 'string') return [type];
  if (schema['properties']) return ['object'];
  return [];
}

function stringFor(schema: Schema): fc.Arbitrary<string> {
  if (schema['format'] === 'date-time')
    return fc.date({ noInvalidDate: true }).map((date) => date.toISOString());
  const max = Math.min(Number(schema['maxLength'] ?? 24), 24);
  return fc.string({ minLength: 1, maxLength: Math.max(1, max) });
}

function objectFor(schema: Schema, components: Record<string, Schema>, depth: number): fc.Arbitrary<Json> {
  const properties = (schema['properties'] as Record<string, Schema> | undefined) ?? {};
  const required = new Set((schema['required'] as string[] | undefined) ?? []);
  const shape = Object.fromEntries(
    Object.entries(properties).map(([key, child]) => [key, valueFor(child, components, depth + 1)]),
  );
  const record = fc.record(shape, { requiredKeys: Object.keys(shape).filter((key) => required.has(key)) });
  const extra = schema['additionalProperties'];
  if (!extra || typeof extra !== 'object' || Object.keys(shape).length > 0) return record;
  return fc.dictionary(
    fc.string({ minLength: 1, maxLength: 20 }),
    valueFor(extra as Schema, components, depth + 1),
    { maxKeys: 3 },
  );
}

/** A value the schema describes (loosely: lengths capped, examples unused, so nothing reaches the network). */
export function valueFor(
  input: Schema | undefined,
  components: Record<string, Schema>,
  depth = 0,
): fc.Arbitrary<Json> {
  const schema = resolve(input, components);
  const choices = (schema['oneOf'] ?? schema['anyOf']) as Schema[] | undefined;
  if (choices?.length) return fc.oneof(...choices.map((choice) => valueFor(choice, components, depth + 1)));
  if (Array.isArray(schema['enum']) && schema['enum'].length > 0)
    return fc.constantFrom(...(schema['enum'] as Json[]));
  if (depth > 6) return fc.constant(null);
  const arbitraries = typesOf(schema).map((type): fc.Arbitrary<Json> => {
    if (type === 'object') return objectFor(schema, components, depth);
    if (type === 'array')
      return fc.array(valueFor(schema['items'] as Schema, components, depth + 1), { maxLength: 3 });
    if (type === 'string') return stringFor(schema);
    if (type === 'integer') return fc.integer({ min: -5, max: 200 });
    if (type === 'number') return fc.double({ noNaN: true, noDefaultInfinity: true });
    if (type === 'boolean') return fc.boolean();
    return fc.constant(null);
  });
  return arbitraries.length > 0 ? fc.oneof(...arbitraries) : fc.jsonValue({ maxDepth: 2 });
}

// ---- mutations ------------------------------------------------------------------------------------------

type Path = (string | number)[];

function nodePaths(value: Json, prefix: Path = [], out: Path[] = []): Path[] {
  out.push(prefix);
  if (prefix.length < 8 && value !== null && typeof value === 'object') {
    for (const [key, child] of Object.entries(value))
      nodePaths(child, [...prefix, Array.isArray(value) ? Number(key) : key], out);
  }
  return out;
}

/** A copy of `value` with the node at `path` replaced (`undefined` removes it). */
function replaceAt(value: Json, path: Path, next: Json | undefined): Json {
  if (path.length === 0) return next;
  const copy = (Array.isArray(value) ? [...value] : { ...(value as object) }) as Record<
    string | number,
    Json
  >;
  const [head, ...rest] = path as [string | number, ...Path];
  if (rest.length === 0 && next === undefined) {
    if (Array.isArray(copy)) copy.splice(Number(head), 1);
    else delete copy[head];
  } else copy[head] = replaceAt(copy[head], rest, next);
  return copy;
}

type Mutation = {
  kind: 'remove' | 'null' | 'wrong type' | 'nasty string' | 'unknown property' | 'deep';
  replacement: Json;
};

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 3, arbitrary: fc.constant<Mutation>({ kind: 'remove', replacement: undefined }) },
  { weight: 3, arbitrary: fc.constant<Mutation>({ kind: 'null', replacement: null }) },
  { weight: 2, arbitrary: wrongType.map((replacement): Mutation => ({ kind: 'wrong type', replacement })) },
  {
    weight: 3,
    arbitrary: nastyString.map((replacement): Mutation => ({ kind: 'nasty string', replacement })),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.oneof(fc.constantFrom('__proto__', 'constructor', 'k\u0000'), fc.string({ maxLength: 12 })),
        wrongType,
      )
      .map(([key, child]): Mutation => ({ kind: 'unknown property', replacement: { [key]: child } })),
  },
  { weight: 1, arbitrary: fc.constant<Mutation>({ kind: 'deep', replacement: null }) },
);

/** `value` with one change at `path`; a deep change leaves a marker that `mutatedBody` expands in the text. */
function applyMutation(value: Json, path: Path, change: Mutation): Json {
  if (change.kind === 'deep') return replaceAt(value, path, DEEP_MARKER);
  if (change.kind !== 'unknown property') return replaceAt(value, path, change.replacement);
  const target = path.reduce<Json>((node, key) => (node as Record<string | number, Json>)[key], value);
  const isObject = target !== null && typeof target === 'object' && !Array.isArray(target);
  return replaceAt(
    value,
    path,
    isObject ? { ...target, ...(change.replacement as object) } : change.replacement,
  );
}

const DEEP_MARKER = '__DEEP__';

/** A body: the value as JSON after one to three changes, each at a node of what the previous left. */
function mutatedBody(value: Json): fc.Arbitrary<{ text: string; note: string }> {
  return fc.array(fc.tuple(fc.nat(), mutation), { minLength: 1, maxLength: 3 }).map((changes) => {
    let current = value;
    const notes: string[] = [];
    for (const [pick, change] of changes) {
      const paths = nodePaths(current);
      const path = paths[pick % paths.length] as Path;
      current = applyMutation(current, path, change);
      notes.push(`${change.kind} at ${path.join('.') || '(root)'}`);
    }
    const text = (JSON.stringify(current) ?? '').replace(JSON.stringify(DEEP_MARKER), deepJson(5_000));
    return { text, note: notes.join(', ') };
  });
}

const rawBodies: fc.Arbitrary<{ text: string; note: string }> = fc.constantFrom(
  { text: '', note: 'empty body' },
  { text: '{"name": ', note: 'malformed JSON' },
  { text: 'null', note: 'JSON null' },
  { text: '[]', note: 'JSON array' },
  { text: '"text"', note: 'JSON string' },
  { text: '1e999', note: 'JSON number out of range' },
  { text: '{"a":1,"a":2}', note: 'duplicate keys' },
  { text: deepJson(5_000, 'array'), note: '5,000-deep arrays' },
  { text: deepJson(40), note: '40-deep objects' },
  { text: '{"\\u0000":"\\u0000"}', note: 'escaped NUL key and value' },
  { text: '{"name":"\\ud800"}', note: 'lone surrogate escape' },
);

/** The body of one request: from the operation's schema or a known-good body, mutated, or raw. */
function bodyText(
  operation: OpenApiOperation,
  fixtures: FuzzFixtures,
  components: Record<string, Schema>,
): fc.Arbitrary<{ text: string; note: string }> {
  const known = fixtures.bodies[operationKey(operation)] ?? [];
  const bases = [
    ...known.map((body) => fc.constant(body)),
    valueFor(operation.bodySchema ?? { type: 'object' }, components),
  ];
  const base = fc.oneof(...bases);
  return fc.oneof(
    {
      weight: 2,
      arbitrary: base.map((value) => ({ text: JSON.stringify(value) ?? '', note: 'schema-shaped body' })),
    },
    { weight: 6, arbitrary: base.chain(mutatedBody) },
    { weight: 2, arbitrary: rawBodies },
  );
}

// ---- encodings, headers, path and query -----------------------------------------------------------------

type Encoding = { headers: Record<string, string>; encode: (text: string) => Buffer; note: string };
const utf8 = (text: string) => Buffer.from(text, 'utf8');

const encodings: fc.Arbitrary<Encoding> = fc.oneof(
  {
    weight: 30,
    arbitrary: fc.constant<Encoding>({
      headers: { 'content-type': 'application/json' },
      encode: utf8,
      note: 'json',
    }),
  },
  fc.constantFrom<Encoding>(
    { headers: { 'content-type': 'application/json; charset=utf-8' }, encode: utf8, note: 'json utf-8' },
    {
      headers: { 'content-type': 'application/json; charset=latin1' },
      encode: (text) => Buffer.from(text, 'latin1'),
      note: 'json latin1',
    },
    {
      headers: { 'content-type': 'application/json; charset=utf-16' },
      encode: (text) => Buffer.from(text, 'utf16le'),
      note: 'json utf-16',
    },
    { headers: { 'content-type': 'text/plain' }, encode: utf8, note: 'text/plain' },
    {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      encode: () => utf8('name=a&left[connector]=b'),
      note: 'form',
    },
    {
      headers: { 'content-type': 'multipart/form-data; boundary=x' },
      encode: () => utf8('--x\r\nContent-Disposition: form-data; name="a"\r\n\r\nb\r\n--x--'),
      note: 'multipart',
    },
    { headers: {}, encode: utf8, note: 'no content type' },
    {
      headers: { 'content-type': 'application/json' },
      encode: () => Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0xc0, 0xaf, 0x22, 0x7d]),
      note: 'invalid UTF-8 bytes',
    },
    {
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      encode: utf8,
      note: 'gzip header on a plain body',
    },
    {
      headers: { 'content-type': 'application/json', 'content-encoding': 'deflate' },
      encode: utf8,
      note: 'deflate header on a plain body',
    },
    {
      headers: { 'content-type': 'application/json', 'content-encoding': 'br' },
      encode: utf8,
      note: 'br header on a plain body',
    },
    {
      headers: { 'content-type': 'application/json', 'content-encoding': 'zstd' },
      encode: utf8,
      note: 'zstd header on a plain body',
    },
    {
      headers: { 'content-type': 'application/json', 'content-encoding': 'x-unknown' },
      encode: utf8,
      note: 'unknown encoding',
    },
    {
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      encode: (text) => gzipSync(text),
      note: 'gzip',
    },
    {
      headers: { 'content-type': 'application/json', 'content-encoding': 'deflate' },
      encode: (text) => deflateSync(text),
      note: 'deflate',
    },
    {
      headers: { 'content-type': 'application/json', 'content-encoding': 'br' },
      encode: (text) => brotliCompressSync(text),
      note: 'br',
    },
    {
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      encode: (text) => gzipSync(text).subarray(0, 12),
      note: 'truncated gzip',
    },
  ),
);

const headerText = fc.oneof(
  fc.string({ unit: 'binary-ascii', maxLength: 40 }).map((text) => text.replace(/[^\x20-\x7e]/g, '')),
  fc.constant('k'.repeat(4_000)),
);

function extraHeaders(operation: OpenApiOperation): fc.Arbitrary<Record<string, string>> {
  const names = operation.parameters
    .filter((parameter) => parameter.in === 'header')
    .map((parameter) => parameter.name);
  const entries = names.map((name) =>
    fc
      .option(fc.oneof(headerText, fc.constantFrom('1', '"1"', 'W/"1"', '*', '99999999999')), {
        nil: undefined,
      })
      .map((value) => [name, value] as const),
  );
  return fc
    .tuple(...entries)
    .map(
      (pairs) =>
        Object.fromEntries(pairs.filter(([, value]) => value !== undefined)) as Record<string, string>,
    );
}

type Credential = { headers: Record<string, string>; note: string };

const auth = (apiKey: string): fc.Arbitrary<Credential> =>
  fc.oneof(
    {
      weight: 20,
      arbitrary: fc.constant<Credential>({ headers: { authorization: `Bearer ${apiKey}` }, note: '' }),
    },
    fc.constantFrom<Credential>(
      { headers: {}, note: 'no key' },
      { headers: { authorization: 'Bearer lsk_not_a_real_key' }, note: 'unknown key' },
      { headers: { authorization: `Basic ${apiKey}` }, note: 'wrong scheme' },
      { headers: { authorization: `Bearer ${'k'.repeat(4_000)}` }, note: 'huge key' },
    ),
  );

/** Percent-encodes the UTF-8 bytes of `text` (a lone surrogate becomes U+FFFD, as it would on the wire). */
function percentEncode(text: string): string {
  return [...Buffer.from(text, 'utf8')]
    .map((byte) =>
      /[A-Za-z0-9_.~-]/.test(String.fromCharCode(byte))
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`,
    )
    .join('');
}

/** A path segment: a fixture's id, a well-formed unknown id, or something malformed (raw or encoded). */
function segment(name: string, fixtures: FuzzFixtures): fc.Arbitrary<string> {
  const known = fixtures.pathValues[name] ?? [];
  const encoded = fc
    .oneof(nastyString, fc.string({ maxLength: 30 }))
    .map((text) => percentEncode(text) || '%20');
  const raw = fc.constantFrom(
    '%00',
    '%zz',
    '%',
    '%C0%AF',
    '%E2%80%AE',
    '..',
    '.',
    'sync_0123456789abcdefghij',
    'lex_0123456789abcdefghij',
    'rec_0123456789abcdefghij',
    '00000000-0000-0000-0000-000000000000',
    'x'.repeat(5_000),
  );
  return fc.oneof(
    ...(known.length ? [{ weight: 6, arbitrary: fc.constantFrom(...known) }] : []),
    { weight: 2, arbitrary: raw },
    { weight: 2, arbitrary: encoded },
  );
}

/** The query string: declared parameters (fixture values, schema values, nasty values, repeated, nested) and strangers. */
function queryString(
  operation: OpenApiOperation,
  fixtures: FuzzFixtures,
  components: Record<string, Schema>,
): fc.Arbitrary<string> {
  const declared = operation.parameters.filter((parameter) => parameter.in === 'query');
  const one = (name: string, schema?: Schema) =>
    fc.oneof(
      {
        weight: 4,
        arbitrary: fc
          .constantFrom(...(fixtures.queryValues[name] ?? ['x']))
          .map((value) => `${name}=${percentEncode(value)}`),
      },
      {
        weight: 2,
        arbitrary: valueFor(schema, components).map(
          (value) =>
            `${name}=${percentEncode(typeof value === 'string' ? value : (JSON.stringify(value) ?? ''))}`,
        ),
      },
      { weight: 2, arbitrary: nastyString.map((value) => `${name}=${percentEncode(value)}`) },
      fc.constantFrom(
        `${name}=`,
        `${name}`,
        `${name}=%00`,
        `${name}=%zz`,
        `${name}=a&${name}=b`,
        `${name}[a]=1`,
        `${name}[]=1&${name}[]=2`,
        `${name}[a][b][c][d][e][f][g]=1`,
      ),
    );
  const parts = declared.map((parameter) =>
    fc.option(one(parameter.name, parameter.schema), { nil: undefined, freq: 3 }),
  );
  const stranger = fc.option(
    fc.constantFrom('unknown=1', '__proto__[x]=1', 'a[b]=%00', `${'q'.repeat(3_000)}=1`),
    { nil: undefined, freq: 4 },
  );
  return fc
    .tuple(stranger, ...parts)
    .map((all) => all.filter((part): part is string => part !== undefined).join('&'));
}

/** Requests for one operation. */
export function requestsFor(
  operation: OpenApiOperation,
  fixtures: FuzzFixtures,
  components: Record<string, Schema>,
): fc.Arbitrary<FuzzRequest> {
  const names = [...operation.path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1] as string);
  const segments = fc.tuple(...names.map((name) => segment(name, fixtures)));
  const hasBody = operation.bodySchema !== null || ['POST', 'PUT', 'PATCH'].includes(operation.method);
  const body = hasBody
    ? fc.option(fc.tuple(bodyText(operation, fixtures, components), encodings), { nil: null, freq: 8 })
    : fc.option(fc.tuple(rawBodies, encodings), { nil: null, freq: 10 });
  return fc
    .record({
      segments,
      query: queryString(operation, fixtures, components),
      key: auth(fixtures.apiKey),
      headers: extraHeaders(operation),
      body,
    })
    .map(({ segments, query, key, headers, body }) => {
      let index = 0;
      const path = operation.path.replace(/\{[^}]+\}/g, () => segments[index++] as string);
      const encoded = body ? body[1].encode(body[0].text) : null;
      const notes = [key.note, body ? `${body[0].note} (${body[1].note})` : 'no body'].filter(Boolean);
      const request: FuzzRequest = {
        method: operation.method,
        url: `/v1${path}${query ? `?${query}` : ''}`,
        headers: { ...key.headers, ...headers, ...(body ? body[1].headers : {}) },
        body: encoded,
        note: notes.join('; '),
      };
      // fast-check prints a counterexample with this, so a failure report stays readable.
      return Object.assign(request, { [fc.toStringMethod]: () => describeRequest(request) });
    });
}

/**
 * One defect at a time at every node of each known-good body: removed, null, a number, and for texts a NUL,
 * a control character and 100 KB. Run before the random requests, so every field meets every class at least
 * once whatever the seed.
 */
export function systematicRequests(operation: OpenApiOperation, fixtures: FuzzFixtures): FuzzRequest[] {
  const names = [...operation.path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1] as string);
  const path = names.reduce(
    (url, name) => url.replace(`{${name}}`, fixtures.pathValues[name]?.[0] ?? 'x'),
    operation.path,
  );
  const required = operation.parameters.filter((parameter) => parameter.in === 'query' && parameter.required);
  const query = required
    .map(
      (parameter) => `${parameter.name}=${percentEncode(fixtures.queryValues[parameter.name]?.[0] ?? 'x')}`,
    )
    .join('&');
  return (fixtures.bodies[operationKey(operation)] ?? []).flatMap((body) =>
    nodePaths(body).flatMap((node) => {
      const leaf = node.reduce<Json>((value, key) => (value as Record<string | number, Json>)[key], body);
      const texts = typeof leaf === 'string' ? ['a\u0000b', 'a\u0007b', HUNDRED_KB] : [];
      return [undefined, null, 123, ...texts].map((replacement): FuzzRequest => {
        const request: FuzzRequest = {
          method: operation.method,
          url: `/v1${path}${query ? `?${query}` : ''}`,
          headers: { authorization: `Bearer ${fixtures.apiKey}`, 'content-type': 'application/json' },
          body: Buffer.from(JSON.stringify(replaceAt(body, node, replacement)) ?? '', 'utf8'),
          note: `${replacement === undefined ? 'removed' : `${JSON.stringify(replacement).slice(0, 20)}`} at ${node.join('.') || '(root)'}`,
        };
        return Object.assign(request, { [fc.toStringMethod]: () => describeRequest(request) });
      });
    }),
  );
}

const clip = (text: string, max = 600) =>
  text.length > max ? `${text.slice(0, max)}... (${text.length} characters)` : text;

/** The request as a reader needs it to replay it by hand. */
export function describeRequest(request: FuzzRequest): string {
  const headers = Object.entries(request.headers).map(
    ([name, value]) =>
      `  ${name}: ${clip(name === 'authorization' ? value.replace(/Bearer \S{8}\S*/, 'Bearer <key>') : value, 120)}`,
  );
  const body = request.body
    ? `  body (${request.body.length} bytes): ${clip(JSON.stringify(request.body.toString('utf8')))}`
    : '  no body';
  return [`${request.method} ${clip(request.url, 400)}`, ...headers, body, `  made as: ${request.note}`].join(
    '\n',
  );
}
