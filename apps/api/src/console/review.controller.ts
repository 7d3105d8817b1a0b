import { Get, Param, Post, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { DomainError, type SyncDto } from '@lockstep/contracts';
import type { ConnectorDeclaration } from '@lockstep/connectors-core';
import type { ValidationIssue } from '@lockstep/domain';
import type { SideName } from '@lockstep/persistence';
import { ConnectorCatalog } from '../connectors/connector-catalog';
import { MappingsService } from '../mappings/mappings.service';
import { SyncStartService } from '../mappings/sync-start.service';
import { SideBuilder } from '../syncs/side-builder';
import { SideConnections } from '../syncs/side-connections';
import { isConnected, isSideName, type LoadedSync, SIDES, SyncAccess } from '../syncs/sync-access';
import { SyncsService } from '../syncs/syncs.service';
import {
  type ConsoleSession,
  consoleAuth,
  ConsoleController,
  consoleNotFound,
  ConsoleRedirect,
  csrfInput,
  Form,
  sendPage,
  Session,
} from './console-session';
import { badge, direction, sideLabel } from './format';
import { html, type SafeHtml } from './html';
import { layout } from './layout';
import { credentialField } from './credential-field';
import { pendingActions } from './syncs.controller';
import { signInSection } from './oauth/oauth-pages';
import { matchValue, type PairView, startEffects, suggestedMatch } from './review-parts';

/** Records counted per side for the review page's preview; beyond it the preview says "more than". */
export const PREVIEW_CAP = 20_000;

type Json = Record<string, unknown>;

interface PairPreview {
  counts: Record<SideName, { records: number; capped: boolean } | null>;
  matched: number | null;
  error: string | null;
}

interface ReviewState {
  bothConnected: boolean;
  pairs: PairView[];
  errors: ValidationIssue[];
  warnings: ValidationIssue[];
  previews: Map<number, PairPreview>;
  suggested: Map<number, string>;
  blockers: string[];
  loadError: string | null;
}

interface ReviewChoices {
  match: Record<number, string>;
  prefer: Record<number, 'left' | 'right'>;
  deleteApproval: 'review_required' | 'auto_approve';
}

function pairsOf(document: { tables: Json[] }): PairView[] {
  return document.tables.map((pair, index) => ({
    index,
    leftTable: String(pair['left_table'] ?? ''),
    rightTable: String(pair['right_table'] ?? ''),
    direction: String(pair['direction'] ?? 'both'),
    fields: ((pair['fields'] ?? []) as Json[]).map((field) => ({
      left: String(field['left_field'] ?? ''),
      right: String(field['right_field'] ?? ''),
      direction: String(field['direction'] ?? pair['direction'] ?? 'both'),
    })),
  }));
}

/** Review and start a draft (`review_url`), and connect a side (`/connect/{side}`). */
@ConsoleController('syncs')
export class ReviewConsoleController {
  constructor(
    private readonly access: SyncAccess,
    private readonly syncs: SyncsService,
    private readonly mappings: MappingsService,
    private readonly starter: SyncStartService,
    private readonly catalog: ConnectorCatalog,
    private readonly builder: SideBuilder,
    private readonly connections: SideConnections,
  ) {}

  // ---- review and start ----

  @Get(':id/review')
  async review(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Res() response: Response,
    @Query('notice') notice?: string,
  ): Promise<void> {
    const loaded = await this.access.load(consoleAuth(session), id);
    await this.renderReview(response, session, loaded, 200, {
      notice,
      choices: { match: {}, prefer: {}, deleteApproval: loaded.sync.deleteApproval },
    });
  }

  @Post(':id/review')
  async reviewAction(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Res() response: Response,
    @Form() form: Record<string, string>,
  ): Promise<void> {
    const auth = consoleAuth(session);
    const loaded = await this.access.load(auth, id);
    const choices: ReviewChoices = {
      match: {},
      prefer: {},
      deleteApproval: form['delete_approval'] === 'auto_approve' ? 'auto_approve' : 'review_required',
    };
    for (const [name, raw] of Object.entries(form)) {
      const match = /^match_(\d+)$/.exec(name);
      // An empty choice ("no match field") is a choice too: it overrides the suggestion.
      if (match) choices.match[Number(match[1])] = raw;
      const prefer = /^prefer_(\d+)$/.exec(name);
      if (prefer && (raw === 'left' || raw === 'right')) choices.prefer[Number(prefer[1])] = raw;
    }
    if (form['action'] !== 'start') {
      await this.renderReview(response, session, loaded, 200, { choices });
      return;
    }
    const matches = Object.entries(choices.match)
      .filter(([, value]) => value)
      .map(([pair, value]) => {
        const [leftField, ...rest] = value.split('=');
        return { tablePair: Number(pair), leftField: leftField ?? '', rightField: rest.join('=') };
      });
    // One winning side for the whole start (the engine takes one); a per-table choice of right wins if any says so.
    const preferences = Object.values(choices.prefer);
    const prefer = preferences.includes('right') && !preferences.includes('left') ? 'right' : 'left';
    try {
      await this.starter.start(auth, id, { match: matches, prefer });
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      await this.renderReview(
        response,
        session,
        await this.access.load(auth, id),
        error.code === 'not_found' ? 404 : 409,
        { choices, error: error.message },
      );
      return;
    }
    if (choices.deleteApproval !== loaded.sync.deleteApproval) {
      // As `lockstep sync start --delete-approval`: set once the start succeeded (the mappings editor may have
      // set it before; the page showed the stored choice).
      await this.syncs.setDeleteApproval(id, choices.deleteApproval);
    }
    throw new ConsoleRedirect(
      `/app/syncs/${id}?notice=${encodeURIComponent('The sync is started: the initial sync runs now.')}`,
    );
  }

  private async renderReview(
    response: Response,
    session: ConsoleSession,
    loaded: LoadedSync,
    status: number,
    input: { notice?: string; error?: string; choices: ReviewChoices },
  ): Promise<void> {
    const sync = await this.syncs.view(loaded);
    const state = await this.reviewState(session, loaded, input.choices);
    sendPage(
      response,
      status,
      layout({
        title: `Review ${sync.name}`,
        session,
        nav: 'syncs',
        body: html`${this.reviewHead(sync, state)}${this.reviewForm(session, sync, loaded, state, input.choices)}`,
        notice: input.notice,
        error: input.error,
      }),
    );
  }

  /**
   * What the review page shows: the mapped pairs, their validation, the preview per pair (with the person's
   * match field, else the suggested one) and why starting is not possible yet.
   */
  private async reviewState(
    session: ConsoleSession,
    loaded: LoadedSync,
    choices: ReviewChoices,
  ): Promise<ReviewState> {
    const state: ReviewState = {
      bothConnected: isConnected(loaded.sides.left) && isConnected(loaded.sides.right),
      pairs: [],
      errors: [],
      warnings: [],
      previews: new Map(),
      suggested: new Map(),
      blockers: [],
      loadError: null,
    };
    if (state.bothConnected) {
      try {
        state.pairs = pairsOf((await this.mappings.get(consoleAuth(session), loaded.sync.id)).document);
        const schema = await this.mappings.schemaWith(loaded, {
          left: state.pairs.map((p) => p.leftTable),
          right: state.pairs.map((p) => p.rightTable),
        });
        const issues = (await this.mappings.validateStored(loaded)).issues;
        state.errors = issues.filter((issue) => issue.severity === 'error');
        state.warnings = issues.filter((issue) => issue.severity !== 'error');
        for (const pair of state.pairs) {
          const suggestion = suggestedMatch(pair, schema);
          if (suggestion) state.suggested.set(pair.index, suggestion);
          if (loaded.sync.status !== 'draft') continue;
          const match = pair.index in choices.match ? choices.match[pair.index] : (suggestion ?? undefined);
          state.previews.set(pair.index, await this.preview(loaded, pair, match || undefined));
        }
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        state.loadError = error.message;
      }
    }
    if (loaded.sync.status !== 'draft')
      state.blockers.push(`The sync is ${loaded.sync.status}: it has been started already.`);
    if (!state.bothConnected) state.blockers.push('Both sides must be connected first.');
    if (state.errors.length > 0)
      state.blockers.push(`${state.errors.length} validation error(s) must be fixed in the mappings first.`);
    if (state.loadError) state.blockers.push(state.loadError);
    return state;
  }

  private reviewHead(sync: SyncDto, state: ReviewState): SafeHtml {
    const { errors, warnings } = state;
    const issueList = (list: ValidationIssue[]) =>
      list.map(
        (issue) => html`<li><code>${issue.code}</code> at <code>${issue.path}</code>: ${issue.message}</li>`,
      );
    return html`<p class="muted"><a href="/app">Syncs</a> / <a href="/app/syncs/${sync.id}">${sync.name}</a> / review</p>
<h1>Review and start "${sync.name}"</h1>
${pendingActions(sync.pending_actions.filter((a) => a.type !== 'user_confirmation'))}
<section class="grid" aria-label="Sides">
${SIDES.map((side) => {
  const s = sync[side];
  return html`<div class="card"><h2>${sideLabel(side)} side</h2>${
    s
      ? html`<dl class="facts"><dt>App</dt><dd>${s.connector_name}</dd><dt>Base</dt><dd><code>${s.base.name}</code></dd><dt>Credentials</dt><dd>${s.auth_status === 'ok' ? badge('ok') : badge('error', s.auth_error ?? 'error')}</dd></dl>`
      : html`<p>${badge('draft', 'not connected')} <a href="/app/syncs/${sync.id}/connect/${side}">Connect the ${side} side</a></p>`
  }</div>`;
})}
</section>
<section aria-labelledby="validation"><h2 id="validation">Validation</h2>
${errors.length === 0 && warnings.length === 0 && state.bothConnected && !state.loadError ? html`<p class="notice">No errors or warnings.</p>` : null}
${errors.length > 0 ? html`<div class="error" role="alert"><strong>${errors.length} error(s)</strong><ul id="validation-errors">${issueList(errors)}</ul></div>` : null}
${warnings.length > 0 ? html`<div class="warning"><strong>${warnings.length} warning(s)</strong><ul id="validation-warnings">${issueList(warnings)}</ul></div>` : null}
${state.bothConnected ? html`<p><a href="/app/syncs/${sync.id}/mappings" id="edit-mappings">Edit the mappings</a></p>` : null}
</section>`;
  }

  private reviewForm(
    session: ConsoleSession,
    sync: SyncDto,
    loaded: LoadedSync,
    state: ReviewState,
    choices: ReviewChoices,
  ): SafeHtml {
    const isDraft = loaded.sync.status === 'draft';
    const canStart = state.blockers.length === 0;
    return html`<form method="post" action="/app/syncs/${sync.id}/review">
${csrfInput(session)}
<section aria-labelledby="tables"><h2 id="tables">Mapped tables</h2>
${state.pairs.length === 0 ? html`<p class="muted">No table pairs mapped.</p>` : null}
${state.pairs.map((pair) => this.pairSection(pair, state.previews.get(pair.index), choices, state.suggested.get(pair.index) ?? null))}
</section>
${state.bothConnected ? this.effects(loaded, state.pairs) : null}
<fieldset><legend>Deletes</legend>
  <label class="choice"><input type="radio" name="delete_approval" value="review_required"${choices.deleteApproval === 'review_required' ? html` checked` : null}> Hold deletes for my review (recommended)</label>
  <label class="choice"><input type="radio" name="delete_approval" value="auto_approve"${choices.deleteApproval === 'auto_approve' ? html` checked` : null}> Apply deletes automatically</label>
</fieldset>
${state.blockers.length > 0 ? html`<div class="warning" id="start-blockers"><strong>Start is not possible yet:</strong><ul>${state.blockers.map((b) => html`<li>${b}</li>`)}</ul></div>` : null}
<div class="actions">
  <button type="submit" name="action" value="start" id="start"${canStart ? null : html` disabled aria-describedby="start-blockers"`}>Start sync</button>
  ${isDraft && state.pairs.length > 0 ? html`<button type="submit" name="action" value="preview" class="secondary">Update preview</button>` : null}
</div>
</form>`;
  }

  /** What starting changes in each app, per side from its connector's declaration. */
  private effects(loaded: LoadedSync, pairs: PairView[]): SafeHtml {
    return html`<section aria-labelledby="changes"><h2 id="changes">What starting changes in each app</h2><ul>${SIDES.map(
      (side) => {
        const entity = loaded.sides[side]!;
        return startEffects({
          side,
          declaration: this.catalog.find(entity.connector),
          connector: entity.connector,
          base: entity.baseName ?? entity.baseId ?? '',
          tables: pairs.map((p) => (side === 'left' ? p.leftTable : p.rightTable)),
        });
      },
    )}</ul></section>`;
  }

  private pairSection(
    pair: PairView,
    preview: PairPreview | undefined,
    choices: ReviewChoices,
    suggested: string | null,
  ): SafeHtml {
    const counts = preview?.counts;
    const both = !!counts?.left && !!counts.right && counts.left.records > 0 && counts.right.records > 0;
    const count = (c: { records: number; capped: boolean } | null) =>
      c ? `${c.capped ? 'more than ' : ''}${c.records}` : '?';
    const selected = pair.index in choices.match ? choices.match[pair.index] : (suggested ?? '');
    const suggestion = suggested ? pair.fields.find((f) => matchValue(f) === suggested) : undefined;
    return html`<div class="card" id="pair-${pair.index}">
<h3>${pair.leftTable} ${direction(pair.direction)} ${pair.rightTable}</h3>
<table><caption class="visually-hidden">Fields of ${pair.leftTable} and ${pair.rightTable}</caption>
<thead><tr><th scope="col">Left field</th><th scope="col">Direction</th><th scope="col">Right field</th></tr></thead>
<tbody>${pair.fields.map((field) => html`<tr><td>${field.left}</td><td>${direction(field.direction)}</td><td>${field.right}</td></tr>`)}</tbody></table>
${
  preview
    ? html`<p class="preview">Initial sync preview: <strong>${count(counts!.left)}</strong> record(s) on the left, <strong>${count(counts!.right)}</strong> on the right${preview.matched !== null ? html`; <strong>${preview.matched}</strong> match on the chosen field` : null}.
${!both ? html`Every record is copied to the other side where the direction allows.` : preview.matched === null ? html`Both sides hold data: pick a match field so the same record is not created twice.` : html`Matched records are linked, the others are copied.`}</p>
${preview.error ? html`<p class="error">${preview.error}</p>` : null}`
    : null
}
${
  both
    ? html`<label for="match-${pair.index}">Match field <span class="hint">Records with equal values are treated as the same record.</span></label>
${suggestion ? html`<p class="hint" id="match-${pair.index}-suggested">Suggested: <strong>${suggestion.left} = ${suggestion.right}</strong>, unique and required on both sides.</p>` : null}
<select id="match-${pair.index}" name="match_${pair.index}"${suggestion ? html` aria-describedby="match-${pair.index}-suggested"` : null}>
  <option value="">No match field (copy every record)</option>
  ${pair.fields.map((field) => html`<option value="${matchValue(field)}"${matchValue(field) === selected ? html` selected` : null}>${field.left} = ${field.right}</option>`)}
</select>
<fieldset><legend>When matched records differ, which side wins?</legend>
  ${(['left', 'right'] as const).map((side) => html`<label class="choice"><input type="radio" name="prefer_${pair.index}" value="${side}"${(choices.prefer[pair.index] ?? 'left') === side ? html` checked` : null}> ${sideLabel(side)} (${side === 'left' ? pair.leftTable : pair.rightTable})</label>`)}
</fieldset>`
    : null
}
</div>`;
  }

  /** Records per side (up to PREVIEW_CAP) and, with a match field, how many values occur once on each side and match. */
  private async preview(loaded: LoadedSync, pair: PairView, match: string | undefined): Promise<PairPreview> {
    const result: PairPreview = { counts: { left: null, right: null }, matched: null, error: null };
    const field = match ? pair.fields.find((f) => matchValue(f) === match) : undefined;
    const keys: Record<SideName, Map<string, number>> = { left: new Map(), right: new Map() };
    try {
      for (const side of SIDES) {
        const table = side === 'left' ? pair.leftTable : pair.rightTable;
        const fieldId = field ? (side === 'left' ? field.left : field.right) : null;
        result.counts[side] = await this.connections.withSide(loaded.sides[side]!, async (connection) => {
          let records = 0;
          let after: string | null = null;
          do {
            const page = await connection.readPage(table, {
              after,
              pageSize: 2000,
              fields: fieldId ? [fieldId] : [],
            });
            records += page.records.length;
            if (fieldId) {
              for (const record of page.records) {
                const v = record.values[fieldId];
                if (v === null || v === undefined || v === '') continue;
                const key = typeof v === 'object' ? JSON.stringify(v) : String(v);
                keys[side].set(key, (keys[side].get(key) ?? 0) + 1);
              }
            }
            after = page.next;
          } while (after && records < PREVIEW_CAP);
          return { records, capped: after !== null };
        });
      }
      if (field) {
        let matched = 0;
        for (const [key, n] of keys.left) if (n === 1 && keys.right.get(key) === 1) matched += 1;
        result.matched = matched;
      }
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      result.error = `The preview could not be read: ${error.message}`;
    }
    return result;
  }

  // ---- connect a side ----

  @Get(':id/connect/:side')
  async connect(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Param('side') side: string,
    @Res() response: Response,
    @Query('connector') connector?: string,
  ): Promise<void> {
    if (!isSideName(side)) throw consoleNotFound();
    const loaded = await this.access.load(consoleAuth(session), id);
    await this.renderConnect(response, session, loaded, side, 200, { connector });
  }

  @Post(':id/connect/:side')
  async connectAction(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Param('side') side: string,
    @Res() response: Response,
    @Form() form: Record<string, string>,
  ): Promise<void> {
    if (!isSideName(side)) throw consoleNotFound();
    const auth = consoleAuth(session);
    const loaded = await this.access.load(auth, id);
    const declaration = this.declarationFor(loaded, side, form['connector'], session.plan);
    if (!declaration || declaration.auth.method !== 'api_key') {
      await this.renderConnect(response, session, loaded, side, 400, {
        connector: form['connector'],
        error: 'Pick an app to connect.',
      });
      return;
    }
    const values: Record<string, string> = {};
    for (const field of declaration.auth.fields) values[field.id] = form[`auth_${field.id}`] ?? '';
    try {
      const credentials = this.builder.credentialsFrom(declaration, values, `${side}.auth`);
      if (form['step'] !== 'connect' || !form['base']) {
        const bases = await this.connections.with(declaration, credentials, null, async (connection) => {
          await connection.checkCredentials();
          return connection.listBases();
        });
        await this.renderConnect(response, session, loaded, side, 200, {
          connector: declaration.type,
          values,
          bases,
        });
        return;
      }
      const changesConnector = declaration.type !== loaded.sides[side]?.connector;
      // `console` is a valid connected_via value (the service's parameter type names only its first callers).
      await this.syncs.update(
        auth,
        id,
        {
          [side]: {
            ...(changesConnector ? { connector: declaration.type } : {}),
            auth: values,
            base: form['base'],
          },
        },
        'console',
      );
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      await this.renderConnect(response, session, loaded, side, 400, {
        connector: declaration.type,
        values,
        error: error.message,
      });
      return;
    }
    const after = await this.syncs.get(auth, id);
    const next = after.pending_actions.find((a) => a.type === 'user_authorization')
      ? `/app/syncs/${id}`
      : `/app/syncs/${id}/review`;
    throw new ConsoleRedirect(
      `${next}?notice=${encodeURIComponent(`Connected ${declaration.displayName} as the ${side} side.`)}`,
    );
  }

  private declarationFor(
    loaded: LoadedSync,
    side: SideName,
    wanted: string | undefined,
    plan: string,
  ): ConnectorDeclaration | undefined {
    const current = loaded.sides[side]?.connector;
    if (wanted && wanted !== current)
      return loaded.sync.status === 'draft' ? this.catalog.available(wanted, plan) : undefined;
    return current ? this.catalog.find(current) : undefined;
  }

  private async renderConnect(
    response: Response,
    session: ConsoleSession,
    loaded: LoadedSync,
    side: SideName,
    status: number,
    input: {
      connector?: string;
      values?: Record<string, string>;
      bases?: { id: string; name: string }[];
      error?: string;
    },
  ): Promise<void> {
    const sync = await this.syncs.view(loaded);
    const entity = loaded.sides[side];
    const declaration =
      this.declarationFor(loaded, side, input.connector, session.plan) ??
      (entity ? this.catalog.find(entity.connector) : undefined);
    const connected = isConnected(entity);
    // A side a person signed in keeps that method (spec 2.6): it is reconnected by signing in again.
    const signedIn = connected && entity?.authMethod === 'oauth';
    const choices = this.catalog.list().filter((c) => this.catalog.available(c.type, session.plan));
    const canChoose = loaded.sync.status === 'draft';
    const action = `/app/syncs/${sync.id}/connect/${side}`;
    const values = input.values ?? {};
    const body = html`<p class="muted"><a href="/app">Syncs</a> / <a href="/app/syncs/${sync.id}">${sync.name}</a> / connect ${side}</p>
<h1>Connect the ${side} side of "${sync.name}"</h1>
${connected && entity ? html`<p class="notice" role="status">This side is connected to ${this.catalog.find(entity.connector)?.displayName ?? entity.connector} (base <code>${entity.baseName ?? entity.baseId ?? ''}</code>). Connecting again replaces its credentials.</p>` : null}
${
  canChoose
    ? html`<form method="get" action="${action}" class="card">
  <label for="connector">App</label>
  <select id="connector" name="connector">${choices.map((c) => html`<option value="${c.type}"${c.type === declaration?.type ? html` selected` : null}>${c.displayName}</option>`)}</select>
  <div class="actions"><button type="submit" class="secondary">Choose app</button></div>
</form>`
    : null
}
${input.error ? html`<p class="error" role="alert">${input.error}</p>` : null}
${
  !declaration
    ? html`<p>Pick the app to connect.</p>`
    : declaration.auth.method === 'oauth' || (signedIn && entity?.connector === declaration.type)
      ? signInSection(session, { syncId: sync.id, side, connector: declaration, alsoToken: false })
      : html`${declaration.auth.oauth && !connected ? signInSection(session, { syncId: sync.id, side, connector: declaration, alsoToken: true }) : null}<section class="card" aria-labelledby="creds"><h2 id="creds">${declaration.displayName} credentials</h2>
<form method="post" action="${action}">
  ${csrfInput(session)}
  <input type="hidden" name="connector" value="${declaration.type}">
  ${declaration.auth.fields.map((field) =>
    credentialField(field, { id: `auth-${field.id}`, name: `auth_${field.id}`, value: values[field.id] }),
  )}
  ${
    input.bases
      ? html`<input type="hidden" name="step" value="connect">
  <label for="base">Base <span class="hint">The schema or database to sync, as your credentials reach it.</span></label>
  <select id="base" name="base" required>${input.bases.map((base) => html`<option value="${base.id}">${base.name}</option>`)}</select>
  <div class="actions"><button type="submit">Connect</button></div>`
      : html`<input type="hidden" name="step" value="bases">
  <div class="actions"><button type="submit">Check and list bases</button></div>`
  }
</form></section>`
}`;
    sendPage(
      response,
      status,
      layout({ title: `Connect ${side} side`, session, nav: 'syncs', body, error: null }),
    );
  }
}
