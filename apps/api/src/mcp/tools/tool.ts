import type { Type } from '@nestjs/common';
import type { AuthContext } from '../../common/auth/auth-context';
import type { ToolServices } from './tool-services';

/** A tool call's arguments put back in the REST operation's terms (parameter names of the OpenAPI document). */
export interface RestInput {
  path: Record<string, string>;
  /** Query parameters as a URL would carry them (text), absent when not given. */
  query: Record<string, string | undefined>;
  /** The `If-Match` header, when the operation takes one. */
  ifMatch?: string;
  /** The request body: the body properties given, validated by the operation's DTO; undefined when none. */
  body: unknown;
}

/** What a tool answers: the JSON the REST endpoint answers, and a sentence or two for the model. */
export interface ToolOutput {
  body: object;
  summary: string;
}

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
}

/**
 * One MCP tool. `route` is the REST endpoint it stands for (controller and method): its OpenAPI operation
 * gives the input schema and its decorators the scope, one-sync and subscription rules, so the tool and the
 * endpoint cannot disagree. `run` calls the same services the controller calls.
 */
export interface ToolDefinition {
  name: string;
  title: string;
  /** For a model: what it does, when to use it, what a person must do. */
  description: string;
  route: [Type, string];
  /** REST parameter name -> tool argument name (`id` -> `sync_id`), so every tool names things alike. */
  rename?: Record<string, string>;
  annotations: ToolAnnotations;
  run(services: ToolServices, auth: AuthContext, input: RestInput): Promise<ToolOutput>;
}
