import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig } from '@lockstep/config';
import { DomainError, ErrorCode, type PendingAction } from '@lockstep/contracts';
import { isId } from '@lockstep/domain';
import { type LiveExportCadence, liveExportAllowedCadences } from '@lockstep/domain';
import { AccountStore, type LiveExportEntity, LiveExportStore } from '@lockstep/persistence';
import type { AuthContext } from '../common/auth/auth-context';

export type LiveExportSide = 'source' | 'destination';

export interface LiveExportGate {
  available: boolean;
  allowedCadences: LiveExportCadence[];
}

/** Every URL a live export response carries: API links under `/v1`, console pages under `/app`. */
@Injectable()
export class LiveExportLinks {
  constructor(private readonly config: AppConfig) {}

  api(path: string): string {
    return `${this.config.publicUrl}/v1/live-export${path}`;
  }

  liveExport(id: string, suffix = ''): string {
    return this.api(`/live-exports/${id}${suffix}`);
  }

  runs(id: string): string {
    return this.api(`/runs?live_export=${id}`);
  }

  run(runId: string, suffix = ''): string {
    return this.api(`/runs/${runId}${suffix}`);
  }

  sourceFields(id: string, table: string): string {
    return this.liveExport(id, `/source/tables/${encodeURIComponent(table)}/fields`);
  }

  connectAction(
    id: string,
    side: LiveExportSide,
    connector: string,
    displayName: string,
    authMethod: 'api_key' | 'oauth',
  ): PendingAction {
    return {
      type: 'user_authorization',
      audience: 'end_user',
      action: 'open_in_browser',
      side,
      connector,
      url: `${this.config.publicUrl}/app/live-exports/${id}/connect/${side}`,
      instruction:
        authMethod === 'oauth'
          ? `Ask a person to open this link, sign in to ${displayName} and allow Lockstep access for ` +
            `the live export's ${side}.`
          : `Ask a person to open this link and enter the ${displayName} credentials for the live ` +
            `export's ${side} (or send them as \`${side}.auth\` in a PATCH of the live export).`,
    };
  }
}

/**
 * Who may use live export and which live exports a caller sees. Live export needs a plan that includes it and
 * an active subscription (`libs/domain/src/live-export/availability.ts`): otherwise writes are
 * `403 live_export_unavailable` and live export ids are `404 not_found` (spec 7.2). One-sync keys are refused
 * on every live export endpoint by the guard (`@NotForSyncRestrictedKeys()` on each controller).
 */
@Injectable()
export class LiveExportAccess {
  private readonly accounts: AccountStore;
  private readonly exports: LiveExportStore;

  constructor(@InjectDataSource() dataSource: DataSource) {
    this.accounts = new AccountStore(dataSource.manager);
    this.exports = new LiveExportStore(dataSource.manager);
  }

  async gate(auth: AuthContext): Promise<LiveExportGate> {
    const account = await this.accounts.plan(auth.accountId);
    const allowedCadences = account
      ? liveExportAllowedCadences({
          plan: account.plan,
          subscriptionActive: account.subscription === 'active',
        })
      : [];
    return { available: allowedCadences.length > 0, allowedCadences };
  }

  /** For endpoints that write: `403 live_export_unavailable` when the account has no live export. */
  async requireWritable(auth: AuthContext): Promise<LiveExportGate> {
    const gate = await this.gate(auth);
    if (!gate.available) {
      throw new DomainError(
        ErrorCode.LiveExportUnavailable,
        `Live export is not available to this account (plan "${auth.plan}"): it needs the pro or ` +
          `business plan and an active subscription.`,
        { plan: auth.plan },
      );
    }
    return gate;
  }

  /**
   * The caller's live export; `404 not_found` for another account's, an unknown id, or when live export is
   * unavailable.
   */
  async load(
    auth: AuthContext,
    id: string,
    mode: 'read' | 'write',
  ): Promise<{ entity: LiveExportEntity; gate: LiveExportGate }> {
    const gate = mode === 'write' ? await this.requireWritable(auth) : await this.gate(auth);
    const notFound = () => new DomainError(ErrorCode.NotFound, `No live export ${id}.`);
    if (!gate.available || !isId('liveExport', id)) throw notFound();
    const entity = await this.exports.findOwned(id, auth.accountId);
    if (!entity) throw notFound();
    return { entity, gate };
  }
}
