import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig } from '@lockstep/config';
import { DomainError, ErrorCode } from '@lockstep/contracts';
import {
  type BaseInfo,
  browserSignIn,
  type ConnectorDeclaration,
  type OAuthSignInDeclaration,
} from '@lockstep/connectors-core';
import {
  CredentialCipher,
  resolveCredentialIssues,
  type SideName,
  sideOwner,
  type SyncSideEntity,
  SyncStore,
} from '@lockstep/persistence';
import { ConnectorCatalog } from '../../connectors/connector-catalog';
import { SideConnections } from '../../syncs/side-connections';
import { isConnected, isSideName, type LoadedSync, SyncAccess } from '../../syncs/sync-access';
import { consoleAuth, consoleNotFound, type ConsoleSession } from '../console-session';
import { oauthClientFor } from './oauth-clients';
import { FLOW_TTL_MS, type FlowBinding, newHandle, OAuthFlows } from './oauth-flows';
import { authorizationRequest, exchangeCode, type GrantedTokens } from './openid';

/**
 * A connector a person signs in to: `oauth` ones, and `api_key` ones that offer a browser sign-in too (spec
 * 2.6: Airtable). `signIn` is its declared sign-in with the endpoints' origin from the settings.
 */
type OAuthDeclaration = ConnectorDeclaration & { signIn: OAuthSignInDeclaration };

/** What a console OAuth request ends in; the controller turns it into a response. */
export type OAuthOutcome =
  | { kind: 'redirect'; location: string }
  | { kind: 'failure'; status: number; title: string; message: string; retryUrl: string | null }
  | {
      kind: 'choose_base';
      handle: string;
      connectorName: string;
      side: SideName;
      syncName: string;
      bases: BaseInfo[];
      cancelUrl: string;
    };

interface AuthorizeSecrets {
  state: string;
  codeVerifier: string;
  nonce: string | null;
}

interface ChooseBaseSecrets {
  granted: GrantedTokens;
  bases: BaseInfo[];
}

const OTHER: Record<SideName, SideName> = { left: 'right', right: 'left' };

/**
 * The reason of a failed code exchange in words: the provider's `error` and `error_description` when it sent
 * them.
 */
function exchangeFailure(caught: unknown): string {
  const body = caught as { error?: unknown; error_description?: unknown; message?: unknown };
  if (typeof body?.error === 'string') {
    const description =
      typeof body.error_description === 'string' ? ` (${body.error_description.slice(0, 300)})` : '';
    return `the app answered ${body.error}${description}`;
  }
  return caught instanceof Error ? caught.message : String(caught);
}

const failure = (status: number, title: string, message: string, retryUrl: string | null): OAuthOutcome => ({
  kind: 'failure',
  status,
  title,
  message,
  retryUrl,
});

/** The OAuth error codes of RFC 6749 4.1.2.1 a person can act on, in words. */
const PROVIDER_ERRORS: Record<string, string> = {
  access_denied: 'access was not granted (you declined, or the app refused)',
  invalid_scope: 'the app does not offer the access Lockstep asks for',
  unauthorized_client: 'the app does not let this Lockstep server sign in',
  temporarily_unavailable: 'the app is temporarily unavailable',
  server_error: 'the app had an internal error',
};

/**
 * The console's "Connect an app" for `oauth` connectors (spec 5.8: a person signed in as the account's owner,
 * never a capability link): the OAuth 2.0 authorization-code flow with PKCE, then the side is connected the
 * way an API-key side is (credentials checked live and stored encrypted, base resolved, one-side-is-left
 * rule, the side's credential issues resolved), which removes the sync's `user_authorization` pending action.
 * Nothing is stored for the side unless every step succeeded.
 */
@Injectable()
export class OAuthConnectService {
  private readonly logger = new Logger('OAuthConnect');

  constructor(
    private readonly config: AppConfig,
    @InjectDataSource() private readonly db: DataSource,
    private readonly access: SyncAccess,
    private readonly catalog: ConnectorCatalog,
    private readonly connections: SideConnections,
    private readonly cipher: CredentialCipher,
    private readonly flows: OAuthFlows,
  ) {}

  /** The declaration with its browser sign-in, or null when the connector offers none. */
  private signInOf(declaration: ConnectorDeclaration | undefined): OAuthDeclaration | null {
    const signIn = declaration ? browserSignIn(declaration, this.config.connectorSettings) : null;
    return declaration && signIn ? { ...declaration, signIn } : null;
  }

  get redirectUri(): string {
    return `${this.config.publicUrl}/app/oauth/callback`;
  }

  private connectUrl(syncId: string, side: SideName): string {
    return `/app/syncs/${syncId}/connect/${side}`;
  }

  /**
   * POST /app/oauth/start: checks the person may connect this side, stores the flow, sends the browser to the
   * app.
   */
  async start(
    session: ConsoleSession,
    sessionHash: Buffer,
    form: Record<string, string>,
  ): Promise<OAuthOutcome> {
    const side = form['side'];
    const loaded = await this.access.load(consoleAuth(session), form['sync'] ?? '');
    if (!isSideName(side) || !loaded.sides[side]) throw consoleNotFound();
    const entity = loaded.sides[side]!;
    const retry = this.connectUrl(loaded.sync.id, side);
    const chosen = form['connector'];
    const picked =
      chosen && chosen !== entity.connector
        ? this.pickConnector(loaded, side, chosen, session.plan, retry)
        : { declaration: this.catalog.find(entity.connector) };
    if ('refused' in picked) return picked.refused;
    if (!picked.declaration)
      return failure(
        409,
        'App no longer offered',
        `This server no longer offers the app "${entity.connector}" of the ${side} side.`,
        null,
      );
    const declaration = this.signInOf(picked.declaration);
    if (!declaration)
      return failure(
        400,
        'No browser sign-in for this app',
        `${picked.declaration.displayName} is connected with its credentials, not by signing in; use the ` +
          `form on the connect page.`,
        retry,
      );
    if (isConnected(entity) && entity.authMethod !== 'oauth')
      return failure(
        409,
        'This side keeps its pasted credentials',
        `The ${side} side was connected with a pasted ${declaration.displayName} token and keeps that ` +
          `method; paste a new token on the connect page to change it.`,
        retry,
      );
    const client = oauthClientFor(this.config, declaration.type);
    if (!client) {
      return failure(
        503,
        `${declaration.displayName} sign-in is not set up`,
        `This Lockstep server has no OAuth client registration for ${declaration.displayName}, so ` +
          `nobody can sign in to it yet. The server's operator must register Lockstep with ` +
          `${declaration.displayName} (redirect URI ${this.redirectUri}) and add its client id and ` +
          `secret to OAUTH_CLIENTS under "${declaration.type}".`,
        retry,
      );
    }
    const request = await authorizationRequest(declaration.signIn, client, this.redirectUri);
    const binding: FlowBinding = {
      sessionHash,
      accountId: session.accountId,
      syncId: loaded.sync.id,
      side,
      connector: declaration.type,
    };
    await this.flows.save<AuthorizeSecrets>(request.state, 'authorize', binding, {
      state: request.state,
      codeVerifier: request.codeVerifier,
      nonce: request.nonce,
    });
    return { kind: 'redirect', location: request.url.href };
  }

  /**
   * Another connector the person picked for a side not connected yet (the connect page's connector choice):
   * only for a draft, on the account's plan, and not the other side's connector unless it syncs to itself.
   */
  private pickConnector(
    loaded: LoadedSync,
    side: SideName,
    chosen: string,
    plan: string,
    retry: string,
  ): { declaration: ConnectorDeclaration | undefined } | { refused: OAuthOutcome } {
    const entity = loaded.sides[side]!;
    const current = this.catalog.find(entity.connector);
    if (isConnected(entity))
      return {
        refused: failure(
          409,
          'This side is already connected',
          `The ${side} side is connected to ${current?.displayName ?? entity.connector}; ` +
            `reconnect it with the same app, or change its app while the sync is a draft.`,
          retry,
        ),
      };
    if (loaded.sync.status !== 'draft')
      return {
        refused: failure(
          409,
          'The sync is running',
          'A side can change its app only while the sync is a draft.',
          retry,
        ),
      };
    const declaration = this.catalog.available(chosen, plan);
    if (!declaration)
      return {
        refused: failure(
          400,
          'App not available',
          `There is no app "${chosen}" on this account's plan.`,
          retry,
        ),
      };
    const other = loaded.sides[OTHER[side]];
    if (other && other.connector === declaration.type && !declaration.capabilities.syncToItself) {
      return {
        refused: failure(
          409,
          'Pick another app',
          `${declaration.displayName} cannot sync to itself, and the other side already uses it.`,
          retry,
        ),
      };
    }
    return { declaration };
  }

  /** The flow's connector with its browser sign-in, unless this server no longer offers it. */
  private offered(connector: string): { declaration: OAuthDeclaration } | { refused: OAuthOutcome } {
    const declaration = this.signInOf(this.catalog.find(connector));
    if (declaration) return { declaration };
    return {
      refused: failure(
        409,
        'App no longer offered',
        `This server no longer offers "${connector}" with browser sign-in.`,
        null,
      ),
    };
  }

  /**
   * GET /app/oauth/callback: one use of `state`, the app's answer, the code exchange, then the connection.
   */
  async callback(
    session: ConsoleSession,
    sessionHash: Buffer,
    query: Record<string, unknown>,
    originalUrl: string,
  ): Promise<OAuthOutcome> {
    const text = (name: string): string => (typeof query[name] === 'string' ? (query[name] as string) : '');
    const flow = await this.flows.consume<AuthorizeSecrets>(
      text('state'),
      'authorize',
      sessionHash,
      session.accountId,
    );
    if (!flow) {
      return failure(
        400,
        'This sign-in cannot be completed',
        'The sign-in link is out of date, was already used, or was started in another browser ' +
          'session or account. Nothing was connected. Start again from the sync’s connect page.',
        null,
      );
    }
    const retry = this.connectUrl(flow.syncId, flow.side);
    const offered = this.offered(flow.connector);
    if ('refused' in offered) return offered.refused;
    const { declaration } = offered;
    const name = declaration.displayName;
    if (flow.expired)
      return failure(
        400,
        'The sign-in took too long',
        `The sign-in at ${name} was not finished within ${FLOW_TTL_MS / 60000} minutes. Nothing was ` +
          `connected.`,
        retry,
      );
    const error = text('error');
    if (error) {
      const description = text('error_description').slice(0, 300);
      const reason = PROVIDER_ERRORS[error] ?? `the app answered "${error.slice(0, 60)}"`;
      return failure(
        error === 'access_denied' ? 403 : 502,
        `${name} was not connected`,
        `${name} says ${reason}${description ? ` (${description})` : ''}. Nothing was connected.`,
        retry,
      );
    }
    const client = oauthClientFor(this.config, declaration.type);
    if (!client)
      return failure(
        503,
        `${name} sign-in is not set up`,
        `This Lockstep server has no OAuth client registration for ${name} any more; the operator ` +
          `must add it to OAUTH_CLIENTS.`,
        retry,
      );
    let granted: GrantedTokens;
    try {
      granted = await exchangeCode(
        declaration.signIn,
        client,
        new URL(originalUrl, this.config.publicUrl),
        flow.secrets,
      );
    } catch (caught) {
      const message = exchangeFailure(caught);
      this.logger.warn(
        { connector: declaration.type, sync_id: flow.syncId, err: message },
        'oauth code exchange failed',
      );
      return failure(
        502,
        `Signing in to ${name} did not finish`,
        `Lockstep could not exchange the sign-in for access: ${message}. Nothing was connected.`,
        retry,
      );
    }
    return this.finish(session, flow, declaration, granted, null);
  }

  /** POST /app/oauth/base: the base the person picked after signing in to an account with several. */
  async chooseBase(
    session: ConsoleSession,
    sessionHash: Buffer,
    form: Record<string, string>,
  ): Promise<OAuthOutcome> {
    const flow = await this.flows.consume<ChooseBaseSecrets>(
      form['flow'] ?? '',
      'choose_base',
      sessionHash,
      session.accountId,
    );
    if (!flow)
      return failure(
        400,
        'This choice cannot be completed',
        'The form is out of date, was already sent, or belongs to another browser session. Nothing ' +
          'was connected.',
        null,
      );
    const retry = this.connectUrl(flow.syncId, flow.side);
    const offered = this.offered(flow.connector);
    if ('refused' in offered) return offered.refused;
    const { declaration } = offered;
    if (flow.expired)
      return failure(
        400,
        'The choice took too long',
        `The base was not picked within ${FLOW_TTL_MS / 60000} minutes of signing in. Nothing was connected.`,
        retry,
      );
    const base = flow.secrets.bases.find((candidate) => candidate.id === form['base']);
    if (!base)
      return failure(
        400,
        'Pick one of the listed bases',
        'The base sent is not one this account reaches. Nothing was connected.',
        retry,
      );
    return this.finish(session, flow, declaration, flow.secrets.granted, base.id);
  }

  /** Checks the new credentials live, resolves the base (or asks for it), and connects the side. */
  private async finish(
    session: ConsoleSession,
    flow: FlowBinding,
    declaration: OAuthDeclaration,
    granted: GrantedTokens,
    chosenBase: string | null,
  ): Promise<OAuthOutcome> {
    const name = declaration.displayName;
    const retry = this.connectUrl(flow.syncId, flow.side);
    const loaded = await this.access.load(consoleAuth(session), flow.syncId);
    const entity = loaded.sides[flow.side];
    if (!entity) throw consoleNotFound();
    const reconnect = isConnected(entity);
    if (reconnect && entity.authMethod !== 'oauth')
      return failure(
        409,
        'The side changed',
        `The ${flow.side} side was connected with pasted credentials while you signed in. Nothing was changed.`,
        retry,
      );
    if (reconnect && entity.connector !== declaration.type)
      return failure(
        409,
        'The side changed',
        `The ${flow.side} side was connected to another app while you signed in. Nothing was changed.`,
        retry,
      );

    let bases: BaseInfo[];
    try {
      bases = await this.connections.with(declaration, granted.credentials, null, async (connection) => {
        await connection.checkCredentials();
        return connection.listBases();
      });
    } catch (caught) {
      if (!(caught instanceof DomainError)) throw caught;
      return failure(
        caught.code === ErrorCode.ConnectionError ? 502 : 400,
        `${name} did not accept the sign-in`,
        `${caught.message}. Nothing was connected.`,
        retry,
      );
    }
    const chosen = await this.resolveBase(
      { flow, name, syncName: loaded.sync.name, granted, retry },
      {
        bases,
        current: reconnect ? entity : null,
        chosenBase,
      },
    );
    if ('outcome' in chosen) return chosen.outcome;
    const { base } = chosen;

    const fingerprint = this.cipher.fingerprint(
      declaration.type,
      granted.identity
        ? { iss: granted.identity.iss, sub: granted.identity.sub }
        : { access_token: granted.credentials['access_token']! },
    );
    const result = await this.connect(flow, declaration, granted, base, fingerprint, reconnect);
    if (result.kind !== 'connected') return failure(409, result.title, result.message, retry);
    const notice = reconnect
      ? `Reconnected ${name} (${base.name}) as the ${result.slot} side.`
      : `Connected ${name} (${base.name}) as the ${result.slot} side.`;
    return {
      kind: 'redirect',
      location: `/app/syncs/${flow.syncId}/review?notice=${encodeURIComponent(notice)}`,
    };
  }

  /**
   * The base to connect: the one a reconnected side already syncs (the account must reach it), the one the
   * person picked, or the account's only base; with several, the person is asked to pick one.
   */
  private async resolveBase(
    context: { flow: FlowBinding; name: string; syncName: string; granted: GrantedTokens; retry: string },
    options: { bases: BaseInfo[]; current: SyncSideEntity | null; chosenBase: string | null },
  ): Promise<{ base: BaseInfo } | { outcome: OAuthOutcome }> {
    const { flow, name, syncName, granted, retry } = context;
    const { bases, current, chosenBase } = options;
    const fail = (...args: Parameters<typeof failure>) => ({ outcome: failure(...args) });
    if (current) {
      const base = bases.find((candidate) => candidate.id === current.baseId);
      if (!base) {
        return fail(
          409,
          'Sign in with the account that owns this base',
          `The ${name} account you signed in with cannot reach “${current.baseName ?? current.baseId}”, ` +
            `which the ${flow.side} side syncs. Nothing was changed.`,
          retry,
        );
      }
      return { base };
    }
    if (chosenBase !== null) {
      const base = bases.find((candidate) => candidate.id === chosenBase);
      if (!base)
        return fail(
          409,
          'That base is gone',
          `The ${name} account no longer reaches the base you picked. Nothing was connected.`,
          retry,
        );
      return { base };
    }
    if (bases.length === 0) {
      return fail(
        409,
        `Nothing to sync in ${name}`,
        `The ${name} account you signed in with has no base Lockstep can sync. Nothing was connected.`,
        retry,
      );
    } else if (bases.length > 1) {
      const handle = newHandle();
      await this.flows.save<ChooseBaseSecrets>(handle, 'choose_base', flow, { granted, bases });
      return {
        outcome: {
          kind: 'choose_base',
          handle,
          connectorName: name,
          side: flow.side,
          syncName,
          bases,
          cancelUrl: retry,
        },
      };
    }
    return { base: bases[0]! };
  }

  /**
   * Stores the side in one transaction with the sync's sides locked. A first connection follows the
   * one-side-is-left rule (spec 2.3): while the left slot is still unconnected, the side connected now takes
   * it and the other still-unconnected app moves to the right slot.
   */
  private async connect(
    flow: FlowBinding,
    declaration: OAuthDeclaration,
    granted: GrantedTokens,
    base: BaseInfo,
    fingerprint: string,
    reconnect: boolean,
  ): Promise<{ kind: 'connected'; slot: SideName } | { kind: 'refused'; title: string; message: string }> {
    return this.db.transaction(async (manager) => {
      const store = new SyncStore(manager);
      const sync = await store.findForUpdate(flow.syncId);
      if (!sync || sync.deletedAt) throw consoleNotFound();
      const rows = await store.sides(flow.syncId);
      const target = rows.find((row) => row.side === flow.side);
      const other = rows.find((row) => row.side === OTHER[flow.side]) ?? null;
      if (!target) throw consoleNotFound();
      if (
        isConnected(target) !== reconnect ||
        (reconnect && (target.connector !== declaration.type || target.authMethod !== 'oauth'))
      ) {
        return {
          kind: 'refused',
          title: 'The side changed',
          message: `The ${flow.side} side changed while you signed in. Nothing was changed.`,
        };
      }
      if (!reconnect && target.connector !== declaration.type && sync.status !== 'draft') {
        return {
          kind: 'refused',
          title: 'The sync is running',
          message: 'A side can change its app only while the sync is a draft. Nothing was connected.',
        };
      }
      if (
        other &&
        isConnected(other) &&
        other.connector === declaration.type &&
        other.baseId === base.id &&
        other.credentialFingerprint === fingerprint
      ) {
        return {
          kind: 'refused',
          title: 'Both sides would be the same',
          message:
            `The other side already syncs “${base.name}” with the same ${declaration.displayName} ` +
            `account; a sync joins two different places. Nothing was connected.`,
        };
      }
      const slot: SideName =
        !reconnect && flow.side === 'right' && other !== null && !isConnected(other) ? 'left' : flow.side;
      const now = new Date();
      if (slot !== flow.side) {
        // The still-unconnected left app moves to the right slot (neither has credentials, schema or engine
        // state yet).
        await store.updateSide(flow.syncId, 'right', {
          connector: other!.connector,
          authMethod: other!.authMethod,
          baseId: null,
          baseName: null,
          credentials: null,
          credentialFingerprint: null,
          connectedVia: null,
          authStatus: 'pending',
          authError: null,
          connectedAt: null,
          updatedAt: now,
        });
      }
      await store.updateSide(flow.syncId, slot, {
        connector: declaration.type,
        authMethod: 'oauth',
        baseId: base.id,
        baseName: base.name,
        credentials: this.cipher.encrypt(granted.credentials, sideOwner(flow.syncId, slot)),
        credentialFingerprint: fingerprint,
        connectedVia: reconnect ? (target.connectedVia ?? 'console') : 'console',
        authStatus: 'ok',
        authError: null,
        connectedAt: reconnect ? (target.connectedAt ?? now) : now,
        updatedAt: now,
      });
      await resolveCredentialIssues(manager, flow.syncId, slot);
      await store.update(flow.syncId, { updatedAt: now });
      return { kind: 'connected', slot };
    });
  }
}
