import { Get, Header, Post, Query, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AppConfig } from '@lockstep/config';
import { AccountsService } from '../accounts/accounts.service';
import { RedisClient } from '../common/redis/redis.module';
import { CONSOLE_CSS } from './console.css';
import { CONSOLE_JS } from './console-script';
import {
  ConsoleController,
  ConsoleOpen,
  ConsoleSessionService,
  CSRF_FIELD,
  csrfRefused,
  Form,
  safeNext,
  sameSecret,
  sendPage,
  SIGN_IN_CSRF_COOKIE,
  readCookie,
} from './console-session';
import { html } from './html';
import { layout } from './layout';

/**
 * Failed sign-ins allowed per email and client address in the window before further tries from there wait.
 */
export const SIGN_IN_FAILURES = 5;
const FAILURE_WINDOW_SECONDS = 15 * 60;

/** Sign-in, sign-out and the stylesheet. */
@ConsoleController()
export class SignInController {
  constructor(
    private readonly sessions: ConsoleSessionService,
    private readonly accounts: AccountsService,
    private readonly redis: RedisClient,
    private readonly config: AppConfig,
  ) {}

  @Get('assets/console.css')
  @ConsoleOpen()
  @Header('Content-Type', 'text/css; charset=utf-8')
  @Header('Cache-Control', 'public, max-age=3600')
  css(): string {
    return CONSOLE_CSS;
  }

  @Get('assets/console.js')
  @ConsoleOpen()
  @Header('Content-Type', 'text/javascript; charset=utf-8')
  @Header('Cache-Control', 'public, max-age=3600')
  js(): string {
    return CONSOLE_JS;
  }

  @Get('sign-in')
  @ConsoleOpen()
  async signInPage(
    @Req() request: Request,
    @Res() response: Response,
    @Query('next') next?: string,
  ): Promise<void> {
    if (request.consoleSession) {
      response.redirect(303, safeNext(next));
      return;
    }
    this.renderSignIn(request, response, 200, { next: safeNext(next) });
  }

  @Post('sign-in')
  @ConsoleOpen()
  async signIn(
    @Req() request: Request,
    @Res() response: Response,
    @Form() form: Record<string, string>,
  ): Promise<void> {
    // Double submit: the hidden field must equal the pre-session cookie the sign-in page set.
    if (!sameSecret(form[CSRF_FIELD], readCookie(request, SIGN_IN_CSRF_COOKIE))) throw csrfRefused();
    const email = (form['email'] ?? '').trim().toLowerCase();
    const password = form['password'] ?? '';
    const next = safeNext(form['next']);
    const counter = `${this.config.QUEUE_PREFIX}:console:signin:${request.ip ?? ''}:${email}`;
    const wait = await this.lockedFor(counter);
    if (wait > 0) {
      this.renderSignIn(request, response, 429, {
        next,
        email,
        error: `Too many failed sign-ins. Wait ${Math.ceil(wait / 60)} minute(s) and try again.`,
      });
      return;
    }
    const account = email && password ? await this.accounts.verifyCredentials(email, password) : null;
    if (!account) {
      await this.recordFailure(counter);
      this.renderSignIn(request, response, 401, {
        next,
        email,
        error: 'The email or password is not right.',
      });
      return;
    }
    await this.sessions.create(response, account.id);
    response.redirect(303, next);
  }

  @Post('sign-out')
  async signOut(@Req() request: Request, @Res() response: Response): Promise<void> {
    await this.sessions.destroy(request, response);
    response.redirect(303, '/app/sign-in?signed_out=1');
  }

  private renderSignIn(
    request: Request,
    response: Response,
    status: number,
    input: { next: string; email?: string; error?: string },
  ): void {
    const csrf = this.sessions.signInCsrf(request, response);
    const signedOut = request.query['signed_out'] === '1';
    sendPage(
      response,
      status,
      layout({
        title: 'Sign in',
        body: html`<div class="card narrow">
<h1>Sign in to Lockstep</h1>
${signedOut ? html`<p class="notice" role="status">You are signed out.</p>` : null}
${input.error ? html`<p class="error" role="alert" id="sign-in-error">${input.error}</p>` : null}
<form method="post" action="/app/sign-in">
  <input type="hidden" name="${CSRF_FIELD}" value="${csrf}">
  <input type="hidden" name="next" value="${input.next}">
  <label for="email">Email</label>
  <input id="email" name="email" type="email" autocomplete="username" required value="${input.email ?? ''}"${input.error ? html` aria-describedby="sign-in-error"` : null} autofocus>
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required>
  <div class="actions"><button type="submit">Sign in</button></div>
</form>
<p class="muted">Accounts are created by the operator of this Lockstep (<code>lockstep account create</code>).</p>
</div>`,
      }),
    );
  }

  /** Seconds until sign-in from this address for this email is allowed again (0: now). */
  private async lockedFor(counter: string): Promise<number> {
    if (Number((await this.redis.client.get(counter)) ?? 0) < SIGN_IN_FAILURES) return 0;
    return Math.max(1, await this.redis.client.ttl(counter));
  }

  private async recordFailure(counter: string): Promise<void> {
    await this.redis.client.multi().incr(counter).expire(counter, FAILURE_WINDOW_SECONDS, 'NX').exec();
  }
}
