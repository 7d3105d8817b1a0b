/**
 * A tool's input, derived from its REST operation in the served OpenAPI document: path and query parameters
 * and the `If-Match` header become arguments (renamed where the tool says), and the properties of the JSON
 * request body are arguments beside them. Component references are kept under `$defs`.
 */
import { DomainError, ErrorCode } from '@lockstep/contracts';
import type { RestInput } from './tool';

type Json = Record<string, unknown>;

interface OpenApiParameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  description?: string;
  schema?: Json;
}

export interface OpenApiOperation {
  operationId?: string;
  parameters?: OpenApiParameter[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Json }> };
}

/** Where each argument goes in the REST request. */
export interface ArgumentPlan {
  inputSchema: Json & { type: 'object' };
  /** tool argument -> REST location and name */
  args: Record<string, { in: 'path' | 'query' | 'if_match' | 'body'; name: string }>;
}

const COMPONENT_REF = '#/components/schemas/';

/** The `If-Match` header is the one header a tool takes (`Idempotency-Key` is for HTTP retries). */
const HEADER_ARGUMENTS: Record<string, string> = { 'if-match': 'if_match' };

function collectRefs(node: unknown, schemas: Json, into: Json): void {
  if (Array.isArray(node)) return node.forEach((item) => collectRefs(item, schemas, into));
  if (!node || typeof node !== 'object') return;
  const ref = (node as Json).$ref;
  if (typeof ref === 'string' && ref.startsWith(COMPONENT_REF)) {
    const name = ref.slice(COMPONENT_REF.length);
    if (!(name in into)) {
      into[name] = schemas[name];
      collectRefs(schemas[name], schemas, into);
    }
  }
  for (const value of Object.values(node as Json)) collectRefs(value, schemas, into);
}

/** `#/components/schemas/X` -> `#/$defs/X` everywhere (a tool's schema stands alone). */
function localRefs(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(localRefs);
  if (!node || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [key, value] of Object.entries(node as Json)) {
    out[key] =
      key === '$ref' && typeof value === 'string'
        ? value.replace(COMPONENT_REF, '#/$defs/')
        : localRefs(value);
  }
  return out;
}

function bodySchema(operation: OpenApiOperation, schemas: Json): { schema: Json; required: boolean } | null {
  const body = operation.requestBody?.content?.['application/json']?.schema;
  if (!body) return null;
  const ref = typeof body.$ref === 'string' ? body.$ref.slice(COMPONENT_REF.length) : null;
  const schema = (ref ? schemas[ref] : body) as Json;
  return { schema, required: operation.requestBody?.required === true };
}

/** The argument plan of one operation; a name clash between parameters and body properties is a bug. */
export function planArguments(
  operation: OpenApiOperation,
  schemas: Json,
  rename: Record<string, string> = {},
): ArgumentPlan {
  const properties: Json = {};
  const required: string[] = [];
  const args: ArgumentPlan['args'] = {};
  const add = (arg: string, schema: Json, where: ArgumentPlan['args'][string], isRequired: boolean) => {
    if (arg in properties) throw new Error(`${operation.operationId}: two arguments named ${arg}`);
    properties[arg] = schema;
    args[arg] = where;
    if (isRequired) required.push(arg);
  };
  for (const parameter of operation.parameters ?? []) {
    const header = HEADER_ARGUMENTS[parameter.name.toLowerCase()];
    if (parameter.in === 'header' && !header) continue;
    if (parameter.in !== 'path' && parameter.in !== 'query' && parameter.in !== 'header') continue;
    const schema = {
      ...parameter.schema,
      ...(parameter.description ? { description: parameter.description } : {}),
    };
    const where = parameter.in === 'header' ? 'if_match' : parameter.in;
    add(
      header ?? rename[parameter.name] ?? parameter.name,
      schema,
      { in: where, name: parameter.name },
      !!parameter.required,
    );
  }
  const body = bodySchema(operation, schemas);
  const bodyRequired = new Set<string>(body?.required ? ((body.schema.required as string[]) ?? []) : []);
  for (const [name, schema] of Object.entries((body?.schema.properties as Json) ?? {})) {
    add(name, schema as Json, { in: 'body', name }, bodyRequired.has(name));
  }
  const defs: Json = {};
  collectRefs(properties, schemas, defs);
  const inputSchema = {
    type: 'object' as const,
    properties,
    ...(required.length ? { required } : {}),
    additionalProperties: false,
    ...(Object.keys(defs).length ? { $defs: defs } : {}),
  };
  return { inputSchema: localRefs(inputSchema) as ArgumentPlan['inputSchema'], args };
}

/** A scalar argument as a URL carries it; anything else is refused like a malformed parameter. */
function asText(arg: string, value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  throw new DomainError(ErrorCode.InvalidRequest, `Argument \`${arg}\` must be a string.`);
}

/** Tool arguments -> the REST request they stand for. Unknown arguments are refused (as unknown body fields are). */
export function toRestInput(plan: ArgumentPlan, raw: Record<string, unknown> | undefined): RestInput {
  const input: RestInput = { path: {}, query: {}, body: undefined };
  const body: Json = {};
  for (const [arg, value] of Object.entries(raw ?? {})) {
    const where = plan.args[arg];
    if (!where) {
      const known =
        Object.keys(plan.args)
          .map((name) => `\`${name}\``)
          .join(', ') || 'none';
      throw new DomainError(
        ErrorCode.InvalidRequest,
        `Unknown argument \`${arg}\`; this tool takes ${known}.`,
      );
    }
    if (value === undefined || value === null) continue;
    if (where.in === 'body') body[where.name] = value;
    else if (where.in === 'if_match') input.ifMatch = asText(arg, value);
    else input[where.in][where.name] = asText(arg, value);
  }
  for (const [arg, where] of Object.entries(plan.args)) {
    if (where.in === 'path' && input.path[where.name] === undefined)
      throw new DomainError(ErrorCode.InvalidRequest, `Argument \`${arg}\` is required.`);
  }
  if (Object.keys(body).length) input.body = body;
  return input;
}
