import { Injectable } from '@nestjs/common';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode as RpcErrorCode,
  ListToolsRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import type { Request, Response } from 'express';
import type { IncomingMessage } from 'node:http';
import type { AuthenticatedKey } from '../api-keys/api-keys.service';
import { McpToolsService } from './mcp-tools.service';
import { ToolCatalog } from './tools/tool-catalog';

const INSTRUCTIONS = [
  'Lockstep keeps two connected apps (a left and a right side) in step. Build a sync with sync_list_connectors,',
  'sync_create, sync_list_tables, sync_list_fields, sync_update_mappings and sync_validate_mappings; run and watch',
  'it with the other tools. Some steps only a person can take (connecting an app in the browser, reviewing and',
  'starting a sync, reviewing deletes): tools then answer a pending action or a `required_action` with an',
  'instruction and a link; relay both to the person, never open the link yourself. When unsure, call',
  'sync_whats_next with the sync id. The live_export_* tools copy source tables one way into a destination on a',
  'schedule.',
].join(' ');

/**
 * The MCP server over Streamable HTTP, stateless: each HTTP request gets its own server and transport, bound
 * to the key that request was admitted with, so any API instance can answer any request and a revoked key
 * stops at its next request.
 */
@Injectable()
export class McpServerService {
  constructor(
    private readonly catalog: ToolCatalog,
    private readonly tools: McpToolsService,
  ) {}

  async handle(admitted: AuthenticatedKey, request: Request, response: Response): Promise<void> {
    const server = this.serverFor(admitted);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    response.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    // `request.auth` (the REST guard's) is never set on this public route; the transport reads no other.
    await transport.handleRequest(request as IncomingMessage, response, request.body);
  }

  private serverFor(admitted: AuthenticatedKey): McpServer {
    const mcp = new McpServer({ name: 'lockstep', version: '1' }, { instructions: INSTRUCTIONS });
    mcp.server.registerCapabilities({ tools: { listChanged: false } });
    mcp.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: this.catalog.list() }));
    mcp.server.setRequestHandler(CallToolRequestSchema, (request) => {
      const tool = this.catalog.get(request.params.name);
      if (!tool) throw new McpError(RpcErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
      return this.tools.call(admitted, tool, request.params.arguments);
    });
    return mcp;
  }
}
