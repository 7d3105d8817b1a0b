import { Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { DomainError, ERROR_CATALOG, ErrorCode } from '@lockstep/contracts';
import type { SideName, ValidationIssue } from '@lockstep/domain';
import { ConnectorCatalog } from '../connectors/connector-catalog';
import { MappingsService } from '../mappings/mappings.service';
import { isConnected, type LoadedSync, SIDES, SyncAccess } from '../syncs/sync-access';
import { SyncsService } from '../syncs/syncs.service';
import {
  type ConsoleSession,
  consoleAuth,
  ConsoleController,
  ConsoleRedirect,
  Form,
  sendPage,
  Session,
} from './console-session';
import { html } from './html';
import { layout } from './layout';
import { completeRows, editorBody, type EditorSide, saveEffectItems } from './mappings-editor';
import {
  type Candidate,
  candidateOf,
  type EditorForm,
  emptyField,
  emptyPair,
  formFromDocument,
  formFromPost,
  placeIssues,
  type PlacedIssue,
  suggestFields,
} from './mappings-form';

interface RenderInput {
  status: number;
  notice?: string;
  error?: string;
  conflict?: { current: number } | null;
  candidate?: Candidate;
}

/**
 * The mappings editor (`/app/syncs/{id}/mappings`): table pairs, field pairs, directions, views, delete
 * behaviour and delete approval, on the same MappingsService as `GET`/`PUT /mappings` and `POST /validate`.
 * A save sends the revision the page was rendered from as `If-Match`; a stale one is answered with the
 * person's edits kept and a message saying someone else changed the mappings.
 */
@ConsoleController('syncs')
export class MappingsConsoleController {
  constructor(
    private readonly access: SyncAccess,
    private readonly syncs: SyncsService,
    private readonly mappings: MappingsService,
    private readonly catalog: ConnectorCatalog,
  ) {}

  @Get(':id/mappings')
  async editor(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Res() response: Response,
    @Query('notice') notice?: string,
  ): Promise<void> {
    const auth = consoleAuth(session);
    const loaded = await this.access.load(auth, id);
    if (!this.bothConnected(loaded)) return this.notConnected(response, session, loaded);
    const view = await this.mappings.get(auth, id);
    const form = formFromDocument(view.document, view.revision, loaded.sync.deleteApproval);
    await this.render(response, session, loaded, form, { status: 200, notice });
  }

  @Post(':id/mappings')
  async editorAction(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Res() response: Response,
    @Form() posted: Record<string, string>,
  ): Promise<void> {
    const auth = consoleAuth(session);
    const loaded = await this.access.load(auth, id);
    if (!this.bothConnected(loaded)) return this.notConnected(response, session, loaded);
    const form = formFromPost(posted);
    const action = posted['action'] ?? 'check';
    if (action === 'save' || action === 'overwrite') {
      const revision = action === 'overwrite' ? Number(posted['current_revision']) || 0 : form.revision;
      return this.save(response, session, loaded, form, revision);
    }
    if (action === 'add_pair') form.pairs.push(emptyPair());
    const addField = /^add_field:(\d+)$/.exec(action);
    if (addField) form.pairs[Number(addField[1])]?.fields.push(emptyField());
    if (action === 'refresh') {
      const schema = await this.schemaOf(loaded, form);
      for (const pair of form.pairs) pair.fields.push(...suggestFields(pair, schema));
    }
    await this.render(response, session, loaded, form, { status: 200 });
  }

  /** Live validation for the console's script: the posted form's issues, placed at its rows. */
  @Post(':id/mappings/check')
  @HttpCode(200)
  async check(
    @Session() session: ConsoleSession,
    @Param('id') id: string,
    @Res() response: Response,
    @Form() posted: Record<string, string>,
  ): Promise<void> {
    const loaded = await this.access.load(consoleAuth(session), id);
    if (!this.bothConnected(loaded)) {
      response.status(409).json({ error: 'Both sides must be connected first.' });
      return;
    }
    const form = formFromPost(posted);
    const candidate = candidateOf(form);
    const validated = await this.validate(session, loaded, candidate);
    const issues = placeIssues(form, candidate, validated.issues);
    const errors = issues.filter((issue) => issue.severity === 'error').length;
    const effects = saveEffectItems({
      form,
      schema: await this.schemaOf(loaded, form),
      sides: this.sides(loaded),
    });
    response.setHeader('Cache-Control', 'no-store');
    response.json({
      issues,
      complete: completeRows(form, validated.unchecked),
      errors,
      warnings: issues.length - errors,
      effects: effects.value,
    });
  }

  private async save(
    response: Response,
    session: ConsoleSession,
    loaded: LoadedSync,
    form: EditorForm,
    revision: number,
  ): Promise<void> {
    const auth = consoleAuth(session);
    const candidate = candidateOf(form);
    let saved: number;
    try {
      saved = (await this.mappings.put(auth, loaded.sync.id, candidate.document, `"${revision}"`)).revision;
    } catch (error) {
      if (!(error instanceof DomainError) || error.code === ErrorCode.NotFound) throw error;
      return this.render(response, session, loaded, form, refusal(error, candidate));
    }
    if (form.deleteApproval !== loaded.sync.deleteApproval)
      await this.syncs.setDeleteApproval(loaded.sync.id, form.deleteApproval);
    const notice =
      `The mappings are saved (revision ${saved}). ` +
      (loaded.sync.status === 'active' ? '' : 'Review and start the sync when you are ready.');
    throw new ConsoleRedirect(`/app/syncs/${loaded.sync.id}/mappings?notice=${encodeURIComponent(notice)}`);
  }

  /**
   * The candidate's issues as `POST /validate` finds them. A structurally malformed pair stops the domain's
   * validation of the whole document, so the other pairs are validated without it: the person sees every
   * issue at once. `unchecked`: form pair indexes whose semantics were not validated (no "compatible").
   */
  private async validate(
    session: ConsoleSession,
    loaded: LoadedSync,
    candidate: Candidate,
  ): Promise<{ issues: ValidationIssue[]; unchecked: number[] }> {
    const run = (tables: Candidate['document']['tables']) =>
      this.mappings.validate(consoleAuth(session), loaded.sync.id, { mappings: { tables } });
    try {
      return { issues: (await run(candidate.document.tables)).issues, unchecked: [] };
    } catch (error) {
      if (!(error instanceof DomainError) || error.code !== ErrorCode.InvalidMappings) throw error;
      const structural = (error.details?.['issues'] ?? []) as ValidationIssue[];
      const broken = new Set(structural.map((issue) => /^\/tables\/(\d+)/.exec(issue.path)?.[1] ?? '*'));
      const kept = candidate.document.tables.flatMap((_, k) => (broken.has(String(k)) ? [] : [k]));
      const unchecked = candidate.pairIndex.filter((_, k) => !kept.includes(k));
      if (broken.has('*') || kept.length === 0) return { issues: structural, unchecked: candidate.pairIndex };
      const rest = (await run(kept.map((k) => candidate.document.tables[k]!))).issues.map((issue) => ({
        ...issue,
        // Paths of the reduced document point back into the candidate's numbering.
        path: issue.path.replace(/^\/tables\/(\d+)/, (_, k: string) => `/tables/${kept[Number(k)]}`),
      }));
      return { issues: [...structural, ...rest], unchecked };
    }
  }

  private schemaOf(loaded: LoadedSync, form: EditorForm) {
    return this.mappings.schemaWith(loaded, {
      left: form.pairs.map((pair) => pair.left.pick),
      right: form.pairs.map((pair) => pair.right.pick),
    });
  }

  private async render(
    response: Response,
    session: ConsoleSession,
    loaded: LoadedSync,
    form: EditorForm,
    input: RenderInput,
  ): Promise<void> {
    const schema = await this.schemaOf(loaded, form);
    const candidate = input.candidate ?? candidateOf(form);
    const validated = await this.validate(session, loaded, candidate);
    const issues: PlacedIssue[] = placeIssues(form, candidate, validated.issues);
    const sides = this.sides(loaded);
    const body = editorBody({
      syncId: loaded.sync.id,
      syncName: loaded.sync.name,
      syncStatus: loaded.sync.status,
      session,
      form,
      schema,
      sides,
      issues,
      unchecked: validated.unchecked,
      conflict: input.conflict ?? null,
    });
    sendPage(
      response,
      input.status,
      layout({
        title: `Mappings of ${loaded.sync.name}`,
        session,
        nav: 'syncs',
        body,
        notice: input.notice,
        error: input.error,
      }),
    );
  }

  /** Each side's app, base and what its table setup writes, from the connector's declaration. */
  private sides(loaded: LoadedSync): Record<SideName, EditorSide> {
    const described = (side: SideName): EditorSide => {
      const entity = loaded.sides[side]!;
      const declaration = this.catalog.find(entity.connector);
      return {
        app: declaration?.displayName ?? entity.connector,
        base: entity.baseName ?? entity.baseId ?? '',
        setup: declaration?.tableSetup ?? null,
      };
    };
    return { left: described('left'), right: described('right') };
  }

  private bothConnected(loaded: LoadedSync): boolean {
    return isConnected(loaded.sides.left) && isConnected(loaded.sides.right);
  }

  private notConnected(response: Response, session: ConsoleSession, loaded: LoadedSync): void {
    const id = loaded.sync.id;
    const body = html`<p class="muted"><a href="/app">Syncs</a> / <a href="/app/syncs/${id}">${loaded.sync.name}</a> / mappings</p>
<h1>Mappings of "${loaded.sync.name}"</h1>
<p class="warning">Both sides must be connected before tables can be mapped: the editor lists what each app has.</p>
<ul>${SIDES.filter((side) => !isConnected(loaded.sides[side])).map((side) => html`<li><a href="/app/syncs/${id}/connect/${side}">Connect the ${side} side</a></li>`)}</ul>`;
    sendPage(
      response,
      409,
      layout({ title: `Mappings of ${loaded.sync.name}`, session, nav: 'syncs', body }),
    );
  }
}

/** How a refused save is shown: the conflict message, the issues at their rows, or the reason on top. */
function refusal(error: DomainError, candidate: Candidate): RenderInput {
  const status = ERROR_CATALOG[error.code].status;
  if (error.code === ErrorCode.RevisionMismatch) {
    const current = Number(error.details?.['current_revision']);
    return { status, candidate, conflict: { current: Number.isFinite(current) ? current : 0 } };
  }
  // A refusal's issues (ISSUE_CODES) are shown at their rows by validating the same candidate again, which
  // also checks the pairs a structural fault kept the PUT from checking.
  return { status, candidate, error: error.message };
}
