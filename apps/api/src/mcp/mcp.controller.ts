import { All, Controller, Get, Header, Post, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { AppConfig } from '@lockstep/config';
import { DomainError, ErrorCode } from '@lockstep/contracts';
import type { AuthenticatedKey } from '../api-keys/api-keys.service';
import { ApiAuthenticator } from '../common/auth/api-auth.guard';
import { Public } from '../common/auth/auth.decorators';
import { McpServerService } from './mcp-server.service';

/** Where the protected resource metadata of `{PUBLIC_URL}/mcp` is served (RFC 9728, path inserted). */
export const RESOURCE_METADATA_PATH = '.well-known/oauth-protected-resource/mcp';

/**
 * `{PUBLIC_URL}/mcp`: the MCP server (Streamable HTTP, stateless, JSON responses). Every request is admitted
 * exactly as a REST request is (same keys, same 401s, same per-key rate budget); each tool then applies its
 * REST endpoint's scope, one-sync and subscription rules. A 401 carries `WWW-Authenticate` naming the
 * protected resource metadata, as the MCP authorization spec asks.
 */
@ApiExcludeController()
@Public()
@Controller()
export class McpController {
  constructor(
    private readonly config: AppConfig,
    private readonly authenticator: ApiAuthenticator,
    private readonly server: McpServerService,
  ) {}

  @Post('mcp')
  async post(@Req() request: Request, @Res() response: Response): Promise<void> {
    const admitted = await this.admit(request, response);
    await this.server.handle(admitted, request, response);
  }

  /** Stateless: no stream for server-initiated messages and no session to end (the transport spec's 405). */
  @All('mcp')
  async other(@Req() request: Request, @Res() response: Response): Promise<void> {
    await this.admit(request, response);
    response
      .status(405)
      .setHeader('Allow', 'POST')
      .json({
        jsonrpc: '2.0',
        error: {
          code: -32000,
          message: 'Method not allowed: this server is stateless; send requests with POST.',
        },
        id: null,
      });
  }

  @Get([RESOURCE_METADATA_PATH, '.well-known/oauth-protected-resource'])
  @Header('Cache-Control', 'public, max-age=3600')
  resourceMetadata(): Record<string, unknown> {
    return {
      resource: `${this.config.publicUrl}/mcp`,
      resource_name: 'Lockstep MCP server',
      authorization_servers: [this.config.publicUrl],
      bearer_methods_supported: ['header'],
      scopes_supported: ['read', 'operate', 'readwrite'],
      resource_documentation: `${this.config.publicUrl}/llms.txt`,
    };
  }

  private async admit(request: Request, response: Response): Promise<AuthenticatedKey> {
    try {
      return await this.authenticator.authenticate(request, response, 'read');
    } catch (error) {
      if (
        error instanceof DomainError &&
        (error.code === ErrorCode.MissingApiKey || error.code === ErrorCode.InvalidApiKey)
      ) {
        const invalid = error.code === ErrorCode.InvalidApiKey ? ', error="invalid_token"' : '';
        const challenge = `Bearer resource_metadata="${this.config.publicUrl}/${RESOURCE_METADATA_PATH}"${invalid}`;
        throw new DomainError(error.code, error.message, error.details, error.requiredAction, {
          ...error.headers,
          'WWW-Authenticate': challenge,
        });
      }
      throw error;
    }
  }
}
