import { Injectable, Logger } from '@nestjs/common';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { AppConfig } from '@lockstep/config';
import type { ErrorBody } from '@lockstep/contracts';
import type { AuthenticatedKey } from '../api-keys/api-keys.service';
import { authorize } from '../common/auth/api-auth.guard';
import { errorBody, toDomainError } from '../common/errors/error.filter';
import { ToolCatalog } from './tools/tool-catalog';
import { ToolServices } from './tools/tool-services';

/** The error as a model reads it: code and message, and what a person must do with the link spelled out. */
function errorText(body: ErrorBody): string {
  const { code, message, required_action: action } = body.error;
  const lines = [`Error ${code}: ${message}`];
  if (action) {
    lines.push(
      `A person must act (${action.type}): ${action.instruction}`,
      `Link for that person: ${action.url}`,
    );
  }
  return lines.join('\n');
}

/**
 * Calls one tool for an admitted key: the tool's endpoint rules first (scope, one-sync key, subscription),
 * then its arguments as the REST endpoint would receive them, then the service. Every refusal or failure is
 * a tool error carrying the spec's error body, never a protocol error.
 */
@Injectable()
export class McpToolsService {
  private readonly logger = new Logger('McpTools');

  constructor(
    private readonly config: AppConfig,
    private readonly catalog: ToolCatalog,
    private readonly services: ToolServices,
  ) {}

  async call(
    admitted: AuthenticatedKey,
    tool: NonNullable<ReturnType<ToolCatalog['get']>>,
    args: Record<string, unknown> | undefined,
  ): Promise<CallToolResult> {
    try {
      const auth = authorize(admitted, tool.requirement);
      const input = await this.catalog.input(tool, args);
      const output = await tool.definition.run(this.services, auth, input);
      return {
        content: [
          { type: 'text', text: output.summary },
          { type: 'text', text: JSON.stringify(output.body) },
        ],
        structuredContent: output.body as Record<string, unknown>,
      };
    } catch (exception) {
      const { error, unexpected } = toDomainError(exception);
      if (unexpected) this.logger.error({ err: exception, tool: tool.listed.name }, 'unexpected tool error');
      const body = errorBody(this.config, error);
      return {
        isError: true,
        content: [
          { type: 'text', text: errorText(body) },
          { type: 'text', text: JSON.stringify(body) },
        ],
        structuredContent: body as unknown as Record<string, unknown>,
      };
    }
  }
}
