import type { Readable, Writable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { checkOptions, type OptionSpecs, UsageError, usageLine } from './args';

/** `mcp --url URL [--key KEY]`; the key may come from LOCKSTEP_API_KEY instead (kept out of process lists). */
export const MCP_BRIDGE_OPTIONS = {
  url: { value: 'URL', required: true },
  key: { value: 'KEY' },
} satisfies OptionSpecs;

export const MCP_BRIDGE_USAGE = usageLine('mcp', MCP_BRIDGE_OPTIONS);

/** A Lockstep address (`https://host`) or its MCP endpoint (`https://host/mcp`): the endpoint. */
export function mcpEndpoint(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`--url must be an http(s) address, not "${raw}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(`--url must be an http(s) address, not "${raw}"`);
  if (!/\/mcp\/?$/.test(url.pathname)) url.pathname = `${url.pathname.replace(/\/$/, '')}/mcp`;
  return url;
}

/**
 * `lockstep mcp`: a stdio MCP server for clients that only speak stdio, forwarding every tools request to a
 * Lockstep's MCP endpoint over Streamable HTTP with the key. Tools, results and errors are the remote ones
 * unchanged. Resolves when the client closes stdin; a refused key fails before anything is served.
 */
export async function runMcpBridge(
  options: Record<string, string>,
  env: NodeJS.ProcessEnv,
  io: { stdin: Readable; stdout: Writable } = { stdin: process.stdin, stdout: process.stdout },
): Promise<void> {
  const values = checkOptions('mcp', MCP_BRIDGE_OPTIONS, options);
  const key = values.key ?? env['LOCKSTEP_API_KEY'];
  if (!key) throw new UsageError(`missing --key (or LOCKSTEP_API_KEY). Usage:\n  ${MCP_BRIDGE_USAGE}`);
  const remote = new Client({ name: 'lockstep-stdio-bridge', version: '1' });
  await remote.connect(
    new StreamableHTTPClientTransport(mcpEndpoint(values.url), {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    }),
  );
  const local = new McpServer({ name: 'lockstep', version: '1' }, { instructions: remote.getInstructions() });
  local.server.registerCapabilities({ tools: { listChanged: false } });
  local.server.setRequestHandler(ListToolsRequestSchema, (request) => remote.listTools(request.params));
  local.server.setRequestHandler(CallToolRequestSchema, (request) => remote.callTool(request.params));
  const closed = new Promise<void>((resolve) => {
    local.server.onclose = resolve;
    io.stdin.once('end', resolve);
  });
  await local.connect(new StdioServerTransport(io.stdin, io.stdout));
  await closed;
  await local.close();
  await remote.close();
}
