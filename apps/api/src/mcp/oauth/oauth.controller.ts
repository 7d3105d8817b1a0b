import {
  Body,
  Controller,
  Get,
  Header,
  HttpCode,
  Injectable,
  type NestMiddleware,
  Post,
  Req,
  Res,
} from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import express, { type NextFunction, type Request, type Response } from 'express';
import { AppConfig } from '@lockstep/config';
import { SCOPES } from '@lockstep/contracts';
import { ApiKeysService } from '../../api-keys/api-keys.service';
import { Public } from '../../common/auth/auth.decorators';
import { McpOAuthClients, OAuthError } from './oauth-clients';
import { McpOAuthCodes, pkceMatches } from './oauth-codes';

const parseForm = express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 50 });

/** The token endpoint takes `application/x-www-form-urlencoded` (RFC 6749 4.1.3); the API's JSON parser skips it. */
@Injectable()
export class OAuthTokenFormMiddleware implements NestMiddleware {
  use(request: Request, response: Response, next: NextFunction): void {
    parseForm(request, response, (error?: unknown) => {
      if (error) {
        response.status(400).json(new OAuthError('invalid_request', 'The form could not be read.').body());
        return;
      }
      next();
    });
  }
}

const field = (body: unknown, name: string): string | undefined => {
  const value = (body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : undefined;
};

/**
 * OAuth 2.1 for MCP clients that sign in instead of pasting a key (the MCP authorization spec): authorization
 * server metadata (RFC 8414), dynamic client registration (RFC 7591) and the token endpoint (authorization
 * code with PKCE S256 only, public clients). The authorization endpoint is the console's consent page. The
 * access token is an API key of the scope the person granted, named after the client, listed and revocable
 * under API keys; it never expires by itself, so there is no refresh token.
 */
@ApiExcludeController()
@Public()
@Controller()
export class McpOAuthController {
  constructor(
    private readonly config: AppConfig,
    private readonly clients: McpOAuthClients,
    private readonly codes: McpOAuthCodes,
    private readonly keys: ApiKeysService,
  ) {}

  @Get('.well-known/oauth-authorization-server')
  @Header('Cache-Control', 'public, max-age=3600')
  metadata(): Record<string, unknown> {
    const base = this.config.publicUrl;
    return {
      issuer: base,
      authorization_endpoint: `${base}/app/oauth/authorize`,
      token_endpoint: `${base}/oauth/token`,
      registration_endpoint: `${base}/oauth/register`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      scopes_supported: [...SCOPES],
      service_documentation: `${base}/llms.txt`,
    };
  }

  @Post('oauth/register')
  @HttpCode(201)
  @Header('Cache-Control', 'no-store')
  register(@Body() body: unknown, @Res({ passthrough: true }) response: Response): Record<string, unknown> {
    try {
      const client = this.clients.register((body ?? {}) as Record<string, unknown>);
      return {
        ...client,
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code'],
        response_types: ['code'],
      };
    } catch (error) {
      if (!(error instanceof OAuthError)) throw error;
      response.status(error.status);
      return error.body();
    }
  }

  @Post('oauth/token')
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  async token(@Req() request: Request, @Res({ passthrough: true }) response: Response): Promise<unknown> {
    try {
      return await this.exchange(request.body);
    } catch (error) {
      if (!(error instanceof OAuthError)) throw error;
      response.status(error.status);
      return error.body();
    }
  }

  private async exchange(body: unknown): Promise<Record<string, unknown>> {
    if (field(body, 'grant_type') !== 'authorization_code')
      throw new OAuthError('unsupported_grant_type', 'Only `grant_type=authorization_code` is supported.');
    const code = field(body, 'code');
    const verifier = field(body, 'code_verifier');
    if (!code || !verifier)
      throw new OAuthError('invalid_request', '`code` and `code_verifier` are required.');
    const grant = await this.codes.take(code);
    const invalid = new OAuthError(
      'invalid_grant',
      'The code is unknown, expired, already used or not for this client.',
    );
    if (!grant) throw invalid;
    if (field(body, 'client_id') !== grant.clientId || field(body, 'redirect_uri') !== grant.redirectUri)
      throw invalid;
    if (!pkceMatches(verifier, grant.codeChallenge)) throw invalid;
    const key = await this.keys.create(grant.accountId, {
      name: `MCP: ${grant.clientName}`.slice(0, 100),
      scope: grant.scope,
    });
    return { access_token: key.secret, token_type: 'Bearer', scope: key.scope };
  }
}
