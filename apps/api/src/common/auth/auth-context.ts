import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Scope } from '@lockstep/contracts';

/** Who is calling: set by the auth guard on every authenticated request. */
export interface AuthContext {
  accountId: string;
  keyId: string;
  scope: Scope;
  /** The one sync this key is limited to, or null for all syncs. */
  syncId: string | null;
  plan: string;
}

declare module 'express-serve-static-core' {
  interface Request {
    auth?: AuthContext;
  }
}

/** `@Auth() auth: AuthContext` in a controller method. */
export const Auth = createParamDecorator((_data: unknown, context: ExecutionContext): AuthContext => {
  const auth = context.switchToHttp().getRequest<Express.Request & { auth?: AuthContext }>().auth;
  if (!auth) throw new Error('Auth() used on a public route');
  return auth;
});
