import { Get, Post, Res } from '@nestjs/common';
import type { Response } from 'express';
import { DomainError, ErrorCode, INPUT_LIMITS } from '@lockstep/contracts';
import type { ConnectorDeclaration } from '@lockstep/connectors-core';
import type { SideName } from '@lockstep/persistence';
import { ConnectorCatalog } from '../connectors/connector-catalog';
import { SideBuilder } from '../syncs/side-builder';
import { SideConnections } from '../syncs/side-connections';
import { SyncsService } from '../syncs/syncs.service';
import {
  type ConsoleSession,
  consoleAuth,
  ConsoleController,
  ConsoleRedirect,
  csrfInput,
  Form,
  sendPage,
  Session,
} from './console-session';
import { html, type SafeHtml } from './html';
import { layout } from './layout';
import { credentialField } from './credential-field';

const SIDES: readonly SideName[] = ['left', 'right'];

interface Base {
  id: string;
  name: string;
}

interface NewSyncForm {
  name: string;
  connector: Record<SideName, string>;
  /** Credential values by side and declared field id. */
  values: Record<SideName, Record<string, string>>;
  base: Record<SideName, string>;
  /**
   * How a side whose app offers both is connected: a pasted credential now, or a person signing in once the
   * sync exists (the side is created deferred, spec 4.2 rule 1).
   */
  method: Record<SideName, 'credentials' | 'sign_in'>;
}

/**
 * Errors at the field they concern: `name`, `{side}.connector`, `{side}.auth` (the app refused the
 * credentials), `{side}.auth.{field}`, `{side}.base`; `form` for the rest.
 */
type FieldErrors = Record<string, string>;

interface PageState {
  form: NewSyncForm;
  errors: FieldErrors;
  /** The live base lists once the credentials were checked (a side signed in by browser has none). */
  bases?: Partial<Record<SideName, Base[]>>;
}

function readForm(
  body: Record<string, string>,
  declarations: (type: string) => ConnectorDeclaration | undefined,
): NewSyncForm {
  const form: NewSyncForm = {
    name: (body['name'] ?? '').trim(),
    connector: { left: body['left_connector'] ?? '', right: body['right_connector'] ?? '' },
    values: { left: {}, right: {} },
    base: { left: body['left_base'] ?? '', right: body['right_base'] ?? '' },
    method: {
      left: body['left_method'] === 'sign_in' ? 'sign_in' : 'credentials',
      right: body['right_method'] === 'sign_in' ? 'sign_in' : 'credentials',
    },
  };
  for (const side of SIDES) {
    const declaration = declarations(form.connector[side]);
    if (declaration?.auth.method !== 'api_key') continue;
    for (const field of declaration.auth.fields)
      form.values[side][field.id] = body[`${side}_auth_${field.id}`] ?? '';
  }
  return form;
}

/** The side is connected by a person signing in after the sync is created (no credentials now). */
function signsInLater(declaration: ConnectorDeclaration, form: NewSyncForm, side: SideName): boolean {
  if (declaration.auth.method !== 'api_key') return true;
  return declaration.auth.oauth !== undefined && form.method[side] === 'sign_in';
}

/** The attributes and message of a field with an error (`aria-invalid`, `aria-describedby`). */
function errorAt(key: string, errors: FieldErrors, id: string): { attrs: SafeHtml; message: SafeHtml } {
  const message = errors[key];
  if (!message) return { attrs: html``, message: html`` };
  return {
    attrs: html` aria-invalid="true" aria-describedby="${id}-error"`,
    message: html`<span class="field-error" id="${id}-error">${message}</span>`,
  };
}

/** A DomainError of a side's credentials or base as field errors (the app's reason is in the message). */
function sideErrors(side: SideName, error: DomainError): FieldErrors {
  const problems = error.details?.['errors'];
  if (error.code === ErrorCode.InvalidRequest && Array.isArray(problems)) {
    const errors: FieldErrors = {};
    for (const problem of problems as { path: string; message: string }[])
      errors[problem.path] = problem.message;
    return errors;
  }
  if (
    error.code === ErrorCode.BaseNotFound ||
    error.code === ErrorCode.BaseAmbiguous ||
    error.code === ErrorCode.BaseConflict
  )
    return { [`${side}.base`]: error.message };
  if (error.code === ErrorCode.InvalidAuth || error.code === ErrorCode.ConnectionError)
    return { [`${side}.auth`]: error.message };
  return { form: error.message };
}

/**
 * The new-sync page: a name, each side's app from the connector catalogue (apps above the plan are shown with
 * the plan that unlocks them), the declared credential fields, the bases from the live list, then the sync is
 * created with the service of `POST /v1/sync/syncs`. An app that signs in by browser is connected afterwards.
 */
@ConsoleController('syncs')
export class NewSyncConsoleController {
  constructor(
    private readonly catalog: ConnectorCatalog,
    private readonly builder: SideBuilder,
    private readonly connections: SideConnections,
    private readonly syncs: SyncsService,
  ) {}

  @Get('new')
  page(@Session() session: ConsoleSession, @Res() response: Response): void {
    const form = {
      name: '',
      connector: { left: '', right: '' },
      values: { left: {}, right: {} },
      base: { left: '', right: '' },
      method: { left: 'credentials' as const, right: 'credentials' as const },
    };
    this.render(response, session, 200, { form, errors: {} });
  }

  /** One form, three buttons (`step`): continue to the credentials, check them and list bases, create. */
  @Post('new')
  async submit(
    @Session() session: ConsoleSession,
    @Res() response: Response,
    @Form() body: Record<string, string>,
  ): Promise<void> {
    const form = readForm(body, (type) => this.catalog.available(type, session.plan));
    const errors = this.checkChoices(form, session.plan);
    if (Object.keys(errors).length > 0 || body['step'] === 'apps') {
      this.render(response, session, Object.keys(errors).length ? 400 : 200, { form, errors });
      return;
    }
    const checked = await this.checkSides(form, session.plan);
    if (Object.keys(checked.errors).length > 0 || body['step'] !== 'create') {
      this.render(response, session, Object.keys(checked.errors).length ? 400 : 200, { form, ...checked });
      return;
    }
    try {
      const side = (s: SideName) => {
        const declaration = this.catalog.available(form.connector[s], session.plan)!;
        return signsInLater(declaration, form, s)
          ? { connector: declaration.type }
          : { connector: declaration.type, auth: form.values[s], base: form.base[s] };
      };
      const sync = await this.syncs.create(consoleAuth(session), {
        name: form.name,
        left: side('left'),
        right: side('right'),
      });
      throw new ConsoleRedirect(
        `/app/syncs/${sync.id}?notice=${encodeURIComponent(`Created the sync ${sync.name}.`)}`,
      );
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      const side: SideName =
        error.details?.['side'] === 'right' || error.code === ErrorCode.BaseConflict ? 'right' : 'left';
      const bases = { ...checked.bases };
      const listed = error.details?.['bases'];
      if (error.code === ErrorCode.BaseNotFound && Array.isArray(listed)) bases[side] = listed as Base[];
      this.render(response, session, 400, { form, bases, errors: sideErrors(side, error) });
    }
  }

  private checkChoices(form: NewSyncForm, plan: string): FieldErrors {
    const errors: FieldErrors = {};
    if (!form.name) errors['name'] = 'Give the sync a name.';
    else if (form.name.length > INPUT_LIMITS.name)
      errors['name'] = `At most ${INPUT_LIMITS.name} characters.`;
    for (const side of SIDES) {
      const wanted = form.connector[side];
      if (!wanted) errors[`${side}.connector`] = `Pick the ${side} side's app.`;
      else if (!this.catalog.available(wanted, plan)) {
        const declaration = this.catalog.find(wanted);
        errors[`${side}.connector`] = declaration
          ? `${declaration.displayName} needs the ${declaration.plan} plan.`
          : `Pick the ${side} side's app.`;
      }
    }
    return errors;
  }

  /** Each side signed in by credentials: the declared fields, then the app accepts them and lists its bases. */
  private async checkSides(
    form: NewSyncForm,
    plan: string,
  ): Promise<Required<Pick<PageState, 'bases' | 'errors'>>> {
    const bases: Partial<Record<SideName, Base[]>> = {};
    let errors: FieldErrors = {};
    for (const side of SIDES) {
      const declaration = this.catalog.available(form.connector[side], plan)!;
      if (declaration.auth.method !== 'api_key' || signsInLater(declaration, form, side)) continue;
      try {
        const credentials = this.builder.credentialsFrom(declaration, form.values[side], `${side}.auth`);
        const listed = await this.connections.with(declaration, credentials, null, async (connection) => {
          await connection.checkCredentials();
          return connection.listBases();
        });
        bases[side] = listed.map((base) => ({ id: base.id, name: base.name }));
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        errors = { ...errors, ...sideErrors(side, error) };
      }
    }
    return { bases, errors };
  }

  private render(response: Response, session: ConsoleSession, status: number, state: PageState): void {
    const { form, errors } = state;
    const name = errorAt('name', errors, 'name');
    const chosen =
      SIDES.every((side) => this.catalog.available(form.connector[side], session.plan)) && !errors['name'];
    const ready = chosen && state.bases !== undefined && Object.keys(errors).length === 0;
    const step = !chosen ? 'apps' : ready ? 'create' : 'bases';
    const body = html`<p class="muted"><a href="/app">Syncs</a> / new sync</p>
<h1>New sync</h1>
${Object.keys(errors).length ? html`<p class="error" role="alert" id="error-summary">${errors['form'] ?? 'Check the fields marked below.'}</p>` : null}
<form method="post" action="/app/syncs/new" novalidate>
${csrfInput(session)}
<section class="card" aria-labelledby="about"><h2 id="about">Name and apps</h2>
<label for="name">Name <span class="hint">How the sync is listed, for example "CRM contacts".</span></label>${name.message}
<input type="text" id="name" name="name" value="${form.name}" maxlength="${INPUT_LIMITS.name}" required${name.attrs}>
<div class="grid">${SIDES.map((side) => this.appChoice(side, form, errors, session.plan))}</div>
${step === 'apps' ? html`<div class="actions"><button type="submit" name="step" value="apps">Continue</button></div>` : null}
</section>
${
  chosen
    ? html`<div class="grid">${SIDES.map((side) => this.sideSection(side, state, session.plan))}</div>
<div class="actions">${step === 'create' ? html`<button type="submit" name="step" value="create" id="create">Create sync</button> <button type="submit" name="step" value="bases" class="secondary">Check again</button>` : html`<button type="submit" name="step" value="bases" id="check">Check and list bases</button>`}</div>`
    : null
}
</form>`;
    sendPage(response, status, layout({ title: 'New sync', session, nav: 'syncs', body }));
  }

  private appChoice(side: SideName, form: NewSyncForm, errors: FieldErrors, plan: string): SafeHtml {
    const error = errorAt(`${side}.connector`, errors, `${side}-connector`);
    return html`<fieldset id="${side}-apps"${error.attrs}><legend>${side === 'left' ? 'Left' : 'Right'} side's app</legend>${error.message}
${this.catalog.list().map((connector) => {
  const available = this.catalog.available(connector.type, plan) !== undefined;
  const id = `${side}-connector-${connector.type}`;
  return html`<label class="choice" for="${id}"><input type="radio" id="${id}" name="${side}_connector" value="${connector.type}"${form.connector[side] === connector.type ? html` checked` : null}${available ? null : html` disabled aria-describedby="${id}-plan"`}> ${connector.displayName}${available ? null : html` <span class="badge warn" id="${id}-plan">needs the ${connector.plan} plan</span>`}</label>`;
})}
</fieldset>`;
  }

  private sideSection(side: SideName, state: PageState, plan: string): SafeHtml {
    const declaration = this.catalog.available(state.form.connector[side], plan)!;
    const title = html`<h2 id="${side}-creds">${side === 'left' ? 'Left' : 'Right'}: ${declaration.displayName}</h2>`;
    if (declaration.auth.method !== 'api_key')
      return html`<section class="card" aria-labelledby="${side}-creds">${title}<p>${declaration.displayName} signs in in your browser: once the sync is created, its page links to <strong>Sign in with ${declaration.displayName}</strong>.</p></section>`;
    const choice = declaration.auth.oauth
      ? this.methodChoice(side, declaration.displayName, state.form)
      : null;
    if (choice && state.form.method[side] === 'sign_in')
      return html`<section class="card" aria-labelledby="${side}-creds">${title}${choice}</section>`;
    const group = errorAt(`${side}.auth`, state.errors, `${side}-auth`);
    const bases = state.bases?.[side];
    const base = errorAt(`${side}.base`, state.errors, `${side}-base`);
    return html`<section class="card" aria-labelledby="${side}-creds">${title}${choice}${group.message}
${declaration.auth.fields.map((field) => {
  const id = `${side}-auth-${field.id}`;
  const own = errorAt(`${side}.auth.${field.id}`, state.errors, id);
  const attrs = state.errors[`${side}.auth.${field.id}`] ? own.attrs : group.attrs;
  const current = state.form.values[side][field.id] ?? '';
  return credentialField(field, {
    id,
    name: `${side}_auth_${field.id}`,
    value: current,
    error: own.message,
    attrs,
  });
})}
${
  bases
    ? html`<label for="${side}-base">Base <span class="hint">The schema or database to sync, as the credentials reach it.</span></label>${base.message}
<select id="${side}-base" name="${side}_base"${base.attrs}>${bases.map((b) => html`<option value="${b.id}"${state.form.base[side] === b.id ? html` selected` : null}>${b.name}</option>`)}</select>`
    : null
}
</section>`;
  }

  /**
   * For an app that offers a browser sign-in beside its credential fields: paste them now, or sign in once the
   * sync exists ("Check and list bases" applies the choice).
   */
  private methodChoice(side: SideName, name: string, form: NewSyncForm): SafeHtml {
    const option = (value: 'credentials' | 'sign_in', label: string) => {
      const id = `${side}-method-${value}`;
      return html`<label class="choice" for="${id}"><input type="radio" id="${id}" name="${side}_method" value="${value}"${form.method[side] === value ? html` checked` : null}> ${label}</label>`;
    };
    return html`<fieldset id="${side}-method"><legend>How to connect ${name}</legend>
${option('credentials', 'Paste a token now')}
${option('sign_in', `Sign in with ${name} after creating the sync`)}
</fieldset>${form.method[side] === 'sign_in' ? html`<p>Once the sync is created, its page links to <strong>Sign in with ${name}</strong>; a side connected this way keeps signing in.</p>` : null}`;
  }
}
