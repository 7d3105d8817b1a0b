import { DomainError } from '@lockstep/contracts';
import { type OpenApiOperation, planArguments, toRestInput } from './input-schema';

const SCHEMAS = {
  BodyDto: {
    type: 'object',
    properties: { name: { type: 'string' }, side: { $ref: '#/components/schemas/SideDto' } },
    required: ['name'],
  },
  SideDto: { type: 'object', properties: { connector: { type: 'string' } } },
};

const OPERATION: OpenApiOperation = {
  operationId: 'updateThing',
  parameters: [
    { name: 'id', in: 'path', required: true, description: 'Thing id.', schema: { type: 'string' } },
    { name: 'limit', in: 'query', required: false, schema: {} },
    { name: 'If-Match', in: 'header', required: false, schema: { type: 'string' } },
    { name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string' } },
  ],
  requestBody: {
    required: true,
    content: { 'application/json': { schema: { $ref: '#/components/schemas/BodyDto' } } },
  },
};

describe('tool input from an OpenAPI operation', () => {
  const plan = planArguments(OPERATION, SCHEMAS, { id: 'thing_id' });

  it('puts parameters (renamed), If-Match and body properties side by side, references under $defs', () => {
    expect(plan.inputSchema).toEqual({
      type: 'object',
      properties: {
        thing_id: { type: 'string', description: 'Thing id.' },
        limit: {},
        if_match: { type: 'string' },
        name: { type: 'string' },
        side: { $ref: '#/$defs/SideDto' },
      },
      required: ['thing_id', 'name'],
      additionalProperties: false,
      $defs: { SideDto: SCHEMAS.SideDto },
    });
  });

  it('turns arguments back into the REST request, scalars as text', () => {
    expect(toRestInput(plan, { thing_id: 't1', limit: 5, if_match: '"3"', name: 'n', side: null })).toEqual({
      path: { id: 't1' },
      query: { limit: '5' },
      ifMatch: '"3"',
      body: { name: 'n' },
    });
    expect(toRestInput(plan, { thing_id: 't1' }).body).toBeUndefined();
  });

  it('refuses unknown arguments, missing path parameters and objects where text is expected', () => {
    expect(() => toRestInput(plan, { thing_id: 't', colour: 'x' })).toThrow(/Unknown argument `colour`/);
    expect(() => toRestInput(plan, {})).toThrow(/`thing_id` is required/);
    expect(() => toRestInput(plan, { thing_id: { a: 1 } })).toThrow(DomainError);
  });

  it('refuses a tool whose parameters and body share a name', () => {
    const clash = planArguments.bind(null, OPERATION, SCHEMAS, { id: 'name' });
    expect(clash).toThrow(/two arguments named name/);
  });
});
