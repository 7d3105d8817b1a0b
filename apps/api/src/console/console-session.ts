import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  applyDecorators,
  type ArgumentsHost,
  type CanActivate,
  Catch,
  Controller,
  createParamDecorator,
  type ExceptionFilter,
  type ExecutionContext,
  HttpException,
  Injectable,
  Logger,
  type NestMiddleware,
  SetMetadata,
  UseFilters,
  UseGuards,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ApiExcludeController } from '@nestjs/swagger';
import { InjectRepository } from '@nestjs/typeorm';
import type { NextFunction, Request, Response } from 'express';
import express from 'express';
import { LessThan, type Repository } from 'typeorm';
import { AppConfig } from '@lockstep/config';
import { DomainError, ERROR_CATALOG, ErrorCode } from '@lockstep/contracts';
import { AccountEntity, ConsoleSessionEntity } from '@lockstep/persistence';
import type { AuthContext } from '../common/auth/auth-context';
import { Public } from '../common/auth/auth.decorators';
import { CSRF_FIELD } from './console-csrf';
import { html, type SafeHtml } from './html';
import { layout } from './layout';

/** Cookie holding the session token (only its SHA-256 is stored). */
export const SESSION_COOKIE = 'lockstep_session';
/** Cookie holding the pre-session CSRF token of the sign-in form (double submit). */
export const SIGN_IN_CSRF_COOKIE = 'lockstep_csrf';
/** A session ends after this long without a request... */
export const SESSION_IDLE_MS = 12 * 60 * 60 * 1000;
/** ...and at the latest this long after sign-in. */
export const SESSION_ABSOLUTE_MS = 7 * 24 * 60 * 60 * 1000;

/** The signed-in person, set on `request.consoleSession` by the ConsoleGuard. */
export interface ConsoleSession {
  accountId: string;
  email: string;
  plan: string;
  csrfToken: string;
}

declare module 'express-serve-static-core' {
  interface Request {
    consoleSession?: ConsoleSession;
    /** The parsed `application/x-www-form-urlencoded` body of a console POST (see ConsoleFormMiddleware). */
    form?: Record<string, string>;
  }
}

const sha256 = (text: string): Buffer => createHash('sha256').update(text).digest();
const token = (): string => randomBytes(32).toString('base64url');

/** Constant-time string comparison (false for different lengths). */
export function sameSecret(a: string | undefined, b: string | undefined): boolean {
  if (typeof a !== 'string' || typeof b !== 'string' || a.length === 0) return false;
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

export function readCookie(request: Request, name: string): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const index = part.indexOf('=');
    if (index > 0 && part.slice(0, index).trim() === name) {
      try {
        return decodeURIComponent(part.slice(index + 1).trim());
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** Only a local console path is accepted as a post-sign-in destination (no open redirect). */
export function safeNext(next: unknown): string {
  if (typeof next !== 'string' || !next.startsWith('/app') || next.startsWith('//') || /[\\\s]/.test(next))
    return '/app';
  if (!/^\/app(\/|\?|$)/.test(next)) return '/app';
  return next;
}

export { CSRF_FIELD };

// ---- errors the console renders as pages ----

/** Thrown by a console handler or guard to send the browser elsewhere (303 See Other). */
export class ConsoleRedirect extends Error {
  constructor(readonly location: string) {
    super(`redirect to ${location}`);
  }
}

/** A console error page with a status (404 for anything not the person's, 403 for a failed CSRF check). */
export class ConsolePageError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    message: string,
  ) {
    super(message);
  }
}

export const consoleNotFound = (): ConsolePageError =>
  new ConsolePageError(
    404,
    'Page not found',
    'There is no such page, or it belongs to another account. Check that you are signed in to the ' +
      'right account.',
  );

// ---- sessions ----

@Injectable()
export class ConsoleSessionService {
  constructor(
    @InjectRepository(ConsoleSessionEntity) private readonly sessions: Repository<ConsoleSessionEntity>,
    @InjectRepository(AccountEntity) private readonly accounts: Repository<AccountEntity>,
    private readonly config: AppConfig,
  ) {}

  /** Cookie attributes: HttpOnly, SameSite=Lax, Path=/app, Secure when PUBLIC_URL is https. */
  cookie(name: string, value: string, maxAgeSeconds?: number): string {
    const parts = [`${name}=${encodeURIComponent(value)}`, 'Path=/app', 'HttpOnly', 'SameSite=Lax'];
    if (this.config.publicUrl.startsWith('https:')) parts.push('Secure');
    if (maxAgeSeconds !== undefined) parts.push(`Max-Age=${maxAgeSeconds}`);
    return parts.join('; ');
  }

  /** Starts a session for the account and sets its cookie. */
  async create(response: Response, accountId: string): Promise<void> {
    await this.sessions.delete({ expiresAt: LessThan(new Date()) });
    const secret = token();
    await this.sessions.insert({
      tokenHash: sha256(secret),
      accountId,
      csrfToken: token(),
      expiresAt: new Date(Date.now() + SESSION_ABSOLUTE_MS),
    });
    response.append('Set-Cookie', this.cookie(SESSION_COOKIE, secret, SESSION_ABSOLUTE_MS / 1000));
    response.append('Set-Cookie', this.cookie(SIGN_IN_CSRF_COOKIE, '', 0));
  }

  /** The signed-in person of a request, or null (no cookie, unknown token, idle or absolute expiry). */
  async find(request: Request): Promise<ConsoleSession | null> {
    const secret = readCookie(request, SESSION_COOKIE);
    if (!secret) return null;
    const hash = sha256(secret);
    const row = await this.sessions.findOne({ where: { tokenHash: hash } });
    if (!row) return null;
    const now = Date.now();
    if (row.expiresAt.getTime() <= now || row.lastSeenAt.getTime() + SESSION_IDLE_MS <= now) {
      await this.sessions.delete({ tokenHash: hash });
      return null;
    }
    const account = await this.accounts.findOne({ where: { id: row.accountId } });
    if (!account) return null;
    if (now - row.lastSeenAt.getTime() > 60_000)
      await this.sessions.update({ tokenHash: hash }, { lastSeenAt: new Date(now) });
    return { accountId: account.id, email: account.email, plan: account.plan, csrfToken: row.csrfToken };
  }

  /** Signs out: deletes the session row and clears the cookie. */
  async destroy(request: Request, response: Response): Promise<void> {
    const secret = readCookie(request, SESSION_COOKIE);
    if (secret) await this.sessions.delete({ tokenHash: sha256(secret) });
    response.append('Set-Cookie', this.cookie(SESSION_COOKIE, '', 0));
  }

  /** The sign-in form's CSRF token: the one in the browser's cookie, or a new one (cookie set). */
  signInCsrf(request: Request, response: Response): string {
    const existing = readCookie(request, SIGN_IN_CSRF_COOKIE);
    if (existing && /^[A-Za-z0-9_-]{43}$/.test(existing)) return existing;
    const fresh = token();
    response.append('Set-Cookie', this.cookie(SIGN_IN_CSRF_COOKIE, fresh, 60 * 60));
    return fresh;
  }

  /**
   * Same-origin check of a POST: `Origin` (or `Referer`) must be PUBLIC_URL's origin when the browser sends
   * one.
   */
  sameOrigin(request: Request): boolean {
    const expected = new URL(this.config.publicUrl).origin;
    if (request.headers['sec-fetch-site'] === 'cross-site') return false;
    const origin = request.headers.origin;
    if (typeof origin === 'string' && origin !== '') return origin === expected;
    const referer = request.headers.referer;
    if (typeof referer === 'string' && referer !== '') {
      try {
        return new URL(referer).origin === expected;
      } catch {
        return false;
      }
    }
    return true;
  }
}

/** The caller context of the signed-in owner for the services: every scope, every sync of the account. */
export function consoleAuth(session: ConsoleSession): AuthContext {
  return {
    accountId: session.accountId,
    keyId: 'console',
    scope: 'readwrite',
    syncId: null,
    plan: session.plan,
  };
}

// ---- guard, decorators ----

const CONSOLE_OPEN = 'lockstep:console-open';
/** A console route that needs no session (the sign-in page). Its POSTs still need their CSRF check. */
export const ConsoleOpen = () => SetMetadata(CONSOLE_OPEN, true);

export const csrfRefused = (): ConsolePageError =>
  new ConsolePageError(
    403,
    'Form expired',
    'This form could not be verified (it is out of date or was sent from another site). Go back, ' +
      'reload the page and try again.',
  );

/**
 * Every console route: a signed-in session (otherwise a redirect to the sign-in page with `next`), and on
 * every POST the same-origin check and the session's CSRF token in the form's `_csrf` field (403 page
 * otherwise).
 */
@Injectable()
export class ConsoleGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly sessions: ConsoleSessionService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    const open = this.reflector.getAllAndOverride<boolean>(CONSOLE_OPEN, [
      context.getHandler(),
      context.getClass(),
    ]);
    const post = request.method !== 'GET' && request.method !== 'HEAD';
    if (post && !this.sessions.sameOrigin(request)) throw csrfRefused();
    const session = await this.sessions.find(request);
    if (session) request.consoleSession = session;
    if (open) return true;
    if (!session) {
      const next = post
        ? typeof request.headers.referer === 'string'
          ? safeNext(pathOf(request.headers.referer))
          : '/app'
        : safeNext(request.originalUrl);
      throw new ConsoleRedirect(`/app/sign-in?next=${encodeURIComponent(next)}`);
    }
    if (post && !sameSecret(request.form?.[CSRF_FIELD], session.csrfToken)) throw csrfRefused();
    return true;
  }
}

function pathOf(url: string): string {
  try {
    const parsed = new URL(url);
    return parsed.pathname + parsed.search;
  } catch {
    return '/app';
  }
}

/** `@Session() session: ConsoleSession` in a console handler (not on ConsoleOpen routes). */
export const Session = createParamDecorator((_data: unknown, context: ExecutionContext): ConsoleSession => {
  const session = context.switchToHttp().getRequest<Request>().consoleSession;
  if (!session) throw new ConsoleRedirect('/app/sign-in');
  return session;
});

/** `@Form() form: Record<string, string>`: the urlencoded body (empty object when none). */
export const Form = createParamDecorator(
  (_data: unknown, context: ExecutionContext): Record<string, string> =>
    context.switchToHttp().getRequest<Request>().form ?? {},
);

/** The hidden CSRF field for a form of the signed-in person. */
export function csrfInput(session: ConsoleSession): SafeHtml {
  return html`<input type="hidden" name="${CSRF_FIELD}" value="${session.csrfToken}">`;
}

// ---- rendering ----

/** Sends a full console page. */
export function sendPage(response: Response, status: number, page: SafeHtml): void {
  response.status(status);
  response.setHeader('Content-Type', 'text/html; charset=utf-8');
  response.setHeader('Cache-Control', 'no-store');
  response.setHeader('X-Frame-Options', 'DENY');
  response.setHeader('Referrer-Policy', 'same-origin');
  response.setHeader(
    'Content-Security-Policy',
    "default-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'",
  );
  response.send(page.value);
}

/** An error page: a heading, the message and a way back. */
export function errorPage(
  session: ConsoleSession | undefined,
  status: number,
  title: string,
  message: string,
): SafeHtml {
  return layout({
    title,
    session,
    body: html`<h1>${title}</h1><p class="lead">${message}</p><p><a class="button secondary" href="/app">Back to your syncs</a></p>`,
  });
}

/**
 * Renders whatever a console handler throws as a page: redirects, 404 and 403 pages, a domain error's message
 * (its status from the catalog; `not_found` is the 404 page), and a logged 500 page for anything unexpected.
 */
@Catch()
export class ConsoleErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('ConsoleErrorFilter');

  catch(exception: unknown, host: ArgumentsHost): void {
    const response = host.switchToHttp().getResponse<Response>();
    const request = host.switchToHttp().getRequest<Request>();
    if (response.headersSent) return;
    const session = request.consoleSession;
    if (exception instanceof ConsoleRedirect) {
      response.redirect(303, exception.location);
      return;
    }
    if (exception instanceof ConsolePageError) {
      sendPage(
        response,
        exception.status,
        errorPage(session, exception.status, exception.title, exception.message),
      );
      return;
    }
    if (exception instanceof DomainError) {
      if (exception.code === ErrorCode.NotFound || exception.code === ErrorCode.InvalidSync) {
        const notFound = consoleNotFound();
        sendPage(response, 404, errorPage(session, 404, notFound.title, notFound.message));
        return;
      }
      const status = ERROR_CATALOG[exception.code].status;
      sendPage(response, status, errorPage(session, status, 'That did not work', exception.message));
      return;
    }
    if (exception instanceof HttpException && exception.getStatus() === 404) {
      const notFound = consoleNotFound();
      sendPage(response, 404, errorPage(session, 404, notFound.title, notFound.message));
      return;
    }
    const requestId = String(request.id ?? '');
    this.logger.error({ err: exception, request_id: requestId }, 'unexpected console error');
    sendPage(
      response,
      500,
      errorPage(
        session,
        500,
        'Something went wrong',
        `An unexpected error occurred. Try again; if it persists, report request id ${requestId}.`,
      ),
    );
  }
}

/**
 * A console controller under `/app`: no API key (session instead), the ConsoleGuard, HTML error pages, and
 * left out of the OpenAPI document. `@ConsoleController('syncs')` serves `/app/syncs/...`.
 */
export const ConsoleController = (path = ''): ClassDecorator =>
  applyDecorators(
    ApiExcludeController(),
    Public(),
    Controller(path ? `app/${path}` : 'app'),
    UseGuards(ConsoleGuard),
    UseFilters(ConsoleErrorFilter),
  );

// ---- form bodies ----

// The mappings editor posts a few controls per field pair: room for some hundred pairs.
const parseForm = express.urlencoded({ extended: false, limit: '256kb', parameterLimit: 4000 });

/**
 * Parses `application/x-www-form-urlencoded` bodies of console POSTs into `request.form` (the API's JSON body
 * middleware leaves `/app` to it: see AppModule).
 */
@Injectable()
export class ConsoleFormMiddleware implements NestMiddleware {
  use(request: Request, response: Response, next: NextFunction): void {
    const type = request.headers['content-type'] ?? '';
    if (request.method !== 'POST' || !/^application\/x-www-form-urlencoded\s*(;|$)/i.test(type)) {
      next();
      return;
    }
    parseForm(request, response, (error?: unknown) => {
      if (error) {
        sendPage(
          response,
          400,
          errorPage(
            undefined,
            400,
            'Form not accepted',
            'The form could not be read (it may be too large). Go back and try again.',
          ),
        );
        return;
      }
      const form: Record<string, string> = {};
      for (const [name, value] of Object.entries((request.body ?? {}) as Record<string, unknown>)) {
        form[name] = Array.isArray(value) ? String(value[value.length - 1]) : String(value);
      }
      request.form = form;
      request.body = undefined;
      next();
    });
  }
}
