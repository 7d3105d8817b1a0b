import { Injectable } from '@nestjs/common';
import { AppConfig } from '@lockstep/config';
import type { PendingAction } from '@lockstep/contracts';
import type { SideName } from '@lockstep/persistence';

/** Every URL a sync response carries: API links under `/v1`, console pages under `/app`. */
@Injectable()
export class SyncLinks {
  constructor(private readonly config: AppConfig) {}

  api(path: string): string {
    return `${this.config.publicUrl}/v1${path}`;
  }

  app(path: string): string {
    return `${this.config.publicUrl}/app${path}`;
  }

  sync(syncId: string): string {
    return this.api(`/sync/syncs/${syncId}`);
  }

  tables(syncId: string, side: SideName): string {
    return this.api(`/sync/syncs/${syncId}/tables?side=${side}`);
  }

  fields(syncId: string, tableId: string, side?: SideName): string {
    return this.api(
      `/sync/syncs/${syncId}/tables/${encodeURIComponent(tableId)}/fields${side ? `?side=${side}` : ''}`,
    );
  }

  bases(syncId: string, side: SideName): string {
    return this.api(`/sync/syncs/${syncId}/sides/${side}/bases`);
  }

  review(syncId: string): string {
    return this.app(`/syncs/${syncId}/review`);
  }

  connect(syncId: string, side: SideName): string {
    return this.app(`/syncs/${syncId}/connect/${side}`);
  }

  /** The record-level change log of a sync, optionally of one record (`rec_` id). */
  operations(syncId: string, recordId?: string): string {
    return this.api(`/sync/operations?sync=${syncId}${recordId ? `&record=${recordId}` : ''}`);
  }

  /** A record's status document (spec 2.12). */
  record(syncId: string, recordId: string): string {
    return this.api(`/sync/records/${recordId}?sync=${syncId}`);
  }

  /**
   * A record's copy on one side, opened in a browser. Databases have no web page of their own for a row, so
   * this is the console's record page showing that side's copy.
   */
  recordPage(syncId: string, recordId: string, side: SideName): string {
    return this.app(`/syncs/${syncId}/records/${recordId}?side=${side}`);
  }

  /**
   * The console page where a person approves, ignores or restores held deletes (one record, or all of a
   * sync).
   */
  pendingDeleteReview(syncId: string, recordId?: string): string {
    return this.app(`/syncs/${syncId}/pending-deletes${recordId ? `/${recordId}` : ''}`);
  }

  /** A person connects a side in the console (browser sign-in or pasting the credentials there). */
  connectAction(
    syncId: string,
    side: SideName,
    connector: string,
    connectorName: string,
    syncName: string,
    reconnect = false,
  ): PendingAction {
    return {
      type: 'user_authorization',
      audience: 'end_user',
      action: 'open_in_browser',
      side,
      connector,
      url: this.connect(syncId, side),
      instruction: reconnect
        ? `Ask a person to open this link, sign in to Lockstep and reconnect ${connectorName} (the ` +
          `${side} side of the sync "${syncName}"): the app rejects the stored credentials.`
        : `Ask a person to open this link, sign in to Lockstep and connect ${connectorName} as the ` +
          `${side} side of the sync "${syncName}". Then poll the sync until its ${side} side appears.`,
    };
  }

  /**
   * A person reviews the mappings and starts the sync in the console (`reviewInstruction` says what that
   * writes).
   */
  reviewAction(syncId: string, instruction: string): PendingAction {
    return {
      type: 'user_confirmation',
      audience: 'end_user',
      action: 'open_in_browser',
      side: null,
      url: this.review(syncId),
      instruction,
    };
  }
}
