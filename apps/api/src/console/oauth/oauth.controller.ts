import { createHash } from 'node:crypto';
import { Get, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import {
  ConsoleController,
  consoleNotFound,
  type ConsoleSession,
  Form,
  readCookie,
  sendPage,
  Session,
  SESSION_COOKIE,
} from '../console-session';
import { OAuthConnectService, type OAuthOutcome } from './oauth-connect.service';
import { basePickerPage, failurePage } from './oauth-pages';

/**
 * The browser session a flow is bound to: the SHA-256 of the session cookie (as `console_sessions` keys it).
 */
function sessionHash(request: Request): Buffer {
  const token = readCookie(request, SESSION_COOKIE);
  if (!token) throw consoleNotFound();
  return createHash('sha256').update(token).digest();
}

/**
 * Browser sign-in for `oauth` sides (`/app/oauth/...`): start (POST from the connect page, CSRF-checked by
 * the console guard), the app's redirect back (callback), and the base picker when the account reaches
 * several.
 */
@ConsoleController('oauth')
export class OAuthConsoleController {
  constructor(private readonly oauth: OAuthConnectService) {}

  @Post('start')
  async start(
    @Session() session: ConsoleSession,
    @Form() form: Record<string, string>,
    @Req() request: Request,
    @Res() response: Response,
  ): Promise<void> {
    this.respond(response, session, await this.oauth.start(session, sessionHash(request), form));
  }

  @Get('callback')
  async callback(
    @Session() session: ConsoleSession,
    @Req() request: Request,
    @Res() response: Response,
  ): Promise<void> {
    this.respond(
      response,
      session,
      await this.oauth.callback(
        session,
        sessionHash(request),
        request.query as Record<string, unknown>,
        request.originalUrl,
      ),
    );
  }

  @Post('base')
  async base(
    @Session() session: ConsoleSession,
    @Form() form: Record<string, string>,
    @Req() request: Request,
    @Res() response: Response,
  ): Promise<void> {
    this.respond(response, session, await this.oauth.chooseBase(session, sessionHash(request), form));
  }

  private respond(response: Response, session: ConsoleSession, outcome: OAuthOutcome): void {
    switch (outcome.kind) {
      case 'redirect':
        response.setHeader('Cache-Control', 'no-store');
        response.redirect(303, outcome.location);
        return;
      case 'failure':
        sendPage(response, outcome.status, failurePage(session, outcome));
        return;
      case 'choose_base':
        sendPage(response, 200, basePickerPage(session, outcome));
        return;
    }
  }
}
