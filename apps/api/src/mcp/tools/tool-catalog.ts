import { Injectable, type Type } from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import { Reflector } from '@nestjs/core';
import { DECORATORS } from '@nestjs/swagger/dist/constants';
import { type EndpointRequirement, endpointRequirement } from '../../common/auth/api-auth.guard';
import { validationPipe } from '../../common/http/validation';
import { OpenApiDocument } from '../../common/openapi/openapi';
import { BUILD_TOOLS } from './build-tools';
import { LIVE_EXPORT_TOOLS } from './live-export-tools';
import { type ArgumentPlan, type OpenApiOperation, planArguments, toRestInput } from './input-schema';
import { MONITOR_TOOLS } from './monitor-tools';
import { NAVIGATE_TOOLS } from './navigate-tools';
import { RUN_TOOLS } from './run-tools';
import type { RestInput, ToolDefinition } from './tool';

/** Every tool, in the order they are listed: build, run, monitor, navigate, then live export. */
export const TOOL_DEFINITIONS: ToolDefinition[] = [
  ...BUILD_TOOLS,
  ...RUN_TOOLS,
  ...MONITOR_TOOLS,
  ...NAVIGATE_TOOLS,
  ...LIVE_EXPORT_TOOLS,
];

/** A tool as `tools/list` shows it. */
export interface ListedTool {
  name: string;
  title: string;
  description: string;
  inputSchema: ArgumentPlan['inputSchema'];
  annotations: ToolDefinition['annotations'] & { title: string };
}

/** A tool ready to call: its definition, where its arguments go, what its endpoint asks of a key. */
export interface CatalogTool {
  definition: ToolDefinition;
  listed: ListedTool;
  requirement: EndpointRequirement;
  plan: ArgumentPlan;
  /** The DTO class the REST endpoint validates its body with, if any. */
  bodyType: Type | null;
}

function operationIdOf([controller, method]: [Type, string]): string {
  const handler = (controller.prototype as Record<string, object>)[method];
  const operation = Reflect.getMetadata(DECORATORS.API_OPERATION, handler) as
    { operationId?: string } | undefined;
  if (!operation?.operationId) throw new Error(`${controller.name}.${method} has no operationId`);
  return operation.operationId;
}

/** The class of the handler's `@Body()` parameter (what the global validation pipe checks), if a DTO. */
function bodyTypeOf([controller, method]: [Type, string]): Type | null {
  const args = (Reflect.getMetadata(ROUTE_ARGS_METADATA, controller, method) ?? {}) as Record<
    string,
    { index: number }
  >;
  const entry = Object.entries(args).find(([key]) => key.startsWith(`${RouteParamtypes.BODY}:`));
  if (!entry) return null;
  const types = Reflect.getMetadata('design:paramtypes', controller.prototype, method) as Type[];
  const type = types[entry[1].index];
  return type && type !== Object ? type : null;
}

/**
 * The tool catalogue, built once from the served OpenAPI document (after the app has booted) and from the
 * REST handlers' decorators: a tool's input schema, scope, one-sync and subscription rules are its endpoint's.
 */
@Injectable()
export class ToolCatalog {
  private tools: Map<string, CatalogTool> | null = null;

  constructor(
    private readonly openApi: OpenApiDocument,
    private readonly reflector: Reflector,
  ) {}

  list(): ListedTool[] {
    return [...this.catalog().values()].map((tool) => tool.listed);
  }

  get(name: string): CatalogTool | undefined {
    return this.catalog().get(name);
  }

  /** The REST request a call stands for; the body is checked by the endpoint's DTO as the REST pipe checks it. */
  async input(tool: CatalogTool, args: Record<string, unknown> | undefined): Promise<RestInput> {
    const input = toRestInput(tool.plan, args);
    if (tool.bodyType) {
      input.body = await validationPipe.transform(input.body ?? {}, {
        type: 'body',
        metatype: tool.bodyType,
      });
    }
    return input;
  }

  private catalog(): Map<string, CatalogTool> {
    if (this.tools) return this.tools;
    const document = this.openApi.document;
    if (!document) throw new Error('The OpenAPI document is built at boot; the tool catalogue needs it.');
    const operations = new Map<string, { method: string; path: string; operation: OpenApiOperation }>();
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item as Record<string, OpenApiOperation>)) {
        if (operation.operationId) operations.set(operation.operationId, { method, path, operation });
      }
    }
    const schemas = (document.components?.schemas ?? {}) as Record<string, unknown>;
    this.tools = new Map(
      TOOL_DEFINITIONS.map((definition) => {
        const operationId = operationIdOf(definition.route);
        const found = operations.get(operationId);
        if (!found)
          throw new Error(`${definition.name}: no operation ${operationId} in the OpenAPI document`);
        return [definition.name, this.toolOf(definition, found, schemas)];
      }),
    );
    return this.tools;
  }

  private toolOf(
    definition: ToolDefinition,
    found: { method: string; path: string; operation: OpenApiOperation },
    schemas: Record<string, unknown>,
  ): CatalogTool {
    const [controller, method] = definition.route;
    const handler = (controller.prototype as Record<string, () => unknown>)[method];
    const plan = planArguments(found.operation, schemas, definition.rename);
    return {
      definition,
      plan,
      bodyType: bodyTypeOf(definition.route),
      requirement: endpointRequirement(
        this.reflector,
        [handler, controller],
        found.method.toUpperCase(),
        found.path,
      ),
      listed: {
        name: definition.name,
        title: definition.title,
        description: definition.description,
        inputSchema: plan.inputSchema,
        annotations: { title: definition.title, ...definition.annotations },
      },
    };
  }
}
