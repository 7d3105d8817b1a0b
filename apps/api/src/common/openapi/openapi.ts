import { Controller, Get, Injectable, type INestApplication } from '@nestjs/common';
import { ApiExcludeController, DocumentBuilder, type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { AppConfig } from '@lockstep/config';
import { ERROR_CATALOG, ERROR_CODES } from '@lockstep/contracts';
import { Public } from '../auth/auth.decorators';
import { ERROR_RESPONSE_REF } from './api-errors';

type Json = Record<string, unknown>;

/** Headers on every response, described once under `components.headers` and referenced. */
const HEADERS: Json = {
  'RateLimit-Policy': {
    description: 'Budget policy (IETF draft), for example `"default";q=120;w=60`.',
    schema: { type: 'string' },
  },
  RateLimit: {
    description: 'Remaining budget (IETF draft), for example `"default";r=119;t=42`.',
    schema: { type: 'string' },
  },
  'RateLimit-Limit': { description: 'Requests allowed per window.', schema: { type: 'integer' } },
  'RateLimit-Remaining': { description: 'Requests left in this window.', schema: { type: 'integer' } },
  'RateLimit-Reset': { description: 'Seconds until the budget refills.', schema: { type: 'integer' } },
  'X-Request-Id': {
    description: 'Request id, also in every log line and in 500 bodies.',
    schema: { type: 'string' },
  },
};
const headerRef = (name: string): Json => ({ $ref: `#/components/headers/${name}` });
const RATE_LIMIT_HEADERS: Json = Object.fromEntries(
  Object.keys(HEADERS).map((name) => [name, headerRef(name)]),
);

const errorResponse = (description: string, codes: string[]): Json => ({
  description: `${description} Codes: ${codes.map((c) => `\`${c}\``).join(', ')}.`,
  headers: RATE_LIMIT_HEADERS,
  content: { 'application/json': { schema: { $ref: ERROR_RESPONSE_REF } } },
});

/** The error responses every operation can give, described once under `components.responses`. */
const COMMON_RESPONSES: Json = {
  Unauthorized: errorResponse('No usable API key; carries a `user_api_key` `required_action`.', [
    'missing_api_key',
    'invalid_api_key',
  ]),
  Forbidden: errorResponse('Authenticated but not allowed.', [
    'insufficient_scope',
    'sync_restricted_key',
    'public_api_not_enabled',
    'subscription_required',
    'forbidden',
  ]),
  RateLimited: {
    ...errorResponse('Over the per-key budget; wait `Retry-After` seconds.', ['rate_limit_exceeded']),
    headers: {
      ...RATE_LIMIT_HEADERS,
      'Retry-After': { description: 'Seconds until the budget refills.', schema: { type: 'integer' } },
    },
  },
  InternalError: errorResponse('Unexpected server error; retry. The body carries `request_id`.', [
    'internal_error',
  ]),
};
const responseRef = (name: string): Json => ({ $ref: `#/components/responses/${name}` });
const COMMON_ERRORS: Json = {
  '401': responseRef('Unauthorized'),
  '403': responseRef('Forbidden'),
  '429': responseRef('RateLimited'),
  '500': responseRef('InternalError'),
};

/**
 * The error body. Not named `Error`: a generated client would declare a type shadowing the built-in one.
 * `required_action` is the same pending action a sync lists (one schema, `PendingActionDto`).
 */
const ERROR_SCHEMAS: Json = {
  ErrorResponse: {
    type: 'object',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['type', 'code', 'message', 'doc_url'],
        properties: {
          type: {
            type: 'string',
            enum: [
              'authentication_error',
              'permission_error',
              'invalid_request_error',
              'requires_action',
              'rate_limit_error',
              'api_error',
            ],
          },
          code: {
            type: 'string',
            enum: [...ERROR_CODES],
            description: ERROR_CODES.map(
              (c) => `- \`${c}\` (${ERROR_CATALOG[c].status}): ${ERROR_CATALOG[c].description}`,
            ).join('\n'),
          },
          message: { type: 'string' },
          doc_url: { type: 'string', format: 'uri' },
          request_id: { type: 'string', description: 'Present on 500 errors.' },
          details: { type: 'object', additionalProperties: true },
          required_action: { $ref: '#/components/schemas/PendingActionDto' },
        },
      },
    },
  },
};

/** OpenAPI 3.0 `nullable: true` becomes a 3.1 type union; recursion over the whole schema tree. */
function to31(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(to31);
  if (!node || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node as Json)) out[k] = to31(v);
  if (out.nullable === true) {
    delete out.nullable;
    if (out.$ref || out.allOf || out.oneOf) {
      // A nullable reference: "the referenced object, or null" (a type union next to allOf would reject
      // null).
      const { description, type: _type, ...rest } = out;
      const single =
        Array.isArray(rest.allOf) && rest.allOf.length === 1 && Object.keys(rest).length === 1
          ? (rest.allOf[0] as Json)
          : null;
      return {
        ...(description ? { description } : {}),
        oneOf: [rest.$ref ? { $ref: rest.$ref } : (single ?? rest), { type: 'null' }],
      };
    }
    if (typeof out.type === 'string') out.type = [out.type, 'null'];
    // An enum lists every allowed value: null too, or a null the type allows would still be refused.
    if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
  } else if (out.nullable === false) delete out.nullable;
  return out;
}

/** Builds the OpenAPI 3.1 description from the code: every endpoint, schema, error and header. */
export function buildOpenApiDocument(app: INestApplication, config: AppConfig): OpenAPIObject {
  const builder = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle('Lockstep API')
    .setDescription(
      'Two-way data sync between connected apps, and scheduled one-way live exports. Every request carries ' +
        ('`Authorization: Bearer <API_KEY>`; keys are created by a person in the console. Errors have ' +
          'the shape ') +
        '`{error: {type, code, message, doc_url, details?, required_action?}}`; lists are pages ' +
        '`{data, has_more, next_cursor}`. 120 requests per minute per key (`RateLimit-*` headers on every ' +
        'response). Agents can call the same operations as MCP tools (`sync_*`, `live_export_*`): a Model ' +
        'Context Protocol server (Streamable HTTP, stateless) is served at `/mcp` on the origin serving this ' +
        'document (outside `/v1`), with the same keys, scopes and rate budget.',
    )
    .setVersion('1')
    .setLicense('Proprietary', `${config.publicUrl}/`)
    // Relative to the document's own address (`/v1/openapi.json`): right behind any proxy, whatever
    // PUBLIC_URL says.
    .addServer('/v1', 'This Lockstep install: the API under `/v1` of the origin serving this document.')
    .addBearerAuth(
      { type: 'http', scheme: 'bearer', description: 'An API key created in the console.' },
      'api_key',
    );
  const document = SwaggerModule.createDocument(app, builder.build(), { deepScanRoutes: true });
  // Paths are served under /v1 (the server URL carries it): strip the prefix from every path.
  const paths: Json = {};
  for (const [path, item] of Object.entries(document.paths)) {
    const operations = item as Record<string, Json>;
    for (const operation of Object.values(operations)) {
      operation.security = [{ api_key: [] }];
      operation.responses = { ...COMMON_ERRORS, ...(operation.responses as Json) };
      for (const response of Object.values(operation.responses as Record<string, Json>)) {
        if (!response.headers && !response.$ref) response.headers = RATE_LIMIT_HEADERS;
      }
    }
    paths[path.replace(/^\/v1/, '') || '/'] = operations;
  }
  const result = to31({ ...document, paths }) as OpenAPIObject;
  type Components = NonNullable<OpenAPIObject['components']>;
  result.components = {
    ...result.components,
    headers: { ...HEADERS, ...result.components?.headers } as Components['headers'],
    responses: { ...COMMON_RESPONSES, ...result.components?.responses } as Components['responses'],
    schemas: { ...ERROR_SCHEMAS, ...result.components?.schemas } as Components['schemas'],
  };
  return result;
}

/** Holds the document built once at boot. */
@Injectable()
export class OpenApiDocument {
  document: OpenAPIObject | null = null;
}

@ApiExcludeController()
@Public()
@Controller()
export class OpenApiController {
  constructor(private readonly holder: OpenApiDocument) {}

  @Get('v1/openapi.json')
  get(): OpenAPIObject | null {
    return this.holder.document;
  }
}
