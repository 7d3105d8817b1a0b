import { Get, Param, Post, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { DomainError, isScope, SCOPES } from '@lockstep/contracts';
import { isId } from '@lockstep/domain';
import { type ApiKeyView, ApiKeysService, type CreatedApiKey } from '../api-keys/api-keys.service';
import { SyncsService } from '../syncs/syncs.service';
import {
  type ConsoleSession,
  consoleAuth,
  ConsoleController,
  ConsoleRedirect,
  consoleNotFound,
  csrfInput,
  Form,
  sendPage,
  Session,
} from './console-session';
import { badge, when } from './format';
import { html, type SafeHtml } from './html';
import { layout } from './layout';

const SCOPE_HELP: Record<string, string> = {
  read: 'read: list and read syncs, schema, mappings, operations, issues and records',
  operate: 'operate: read, plus pause and activate syncs, retry issues, refetch records',
  readwrite: 'readwrite: everything, including creating and changing syncs and mappings',
};

/** Settings > API keys: create (secret shown once), list, revoke. */
@ConsoleController('settings/api-keys')
export class ApiKeysConsoleController {
  constructor(
    private readonly keys: ApiKeysService,
    private readonly syncs: SyncsService,
  ) {}

  @Get()
  async page(
    @Session() session: ConsoleSession,
    @Res() response: Response,
    @Query('scope') scope?: string,
    @Query('notice') notice?: string,
  ): Promise<void> {
    await this.render(response, session, 200, { scope: isScope(scope) ? scope : 'read', notice });
  }

  @Post()
  async create(
    @Session() session: ConsoleSession,
    @Res() response: Response,
    @Form() form: Record<string, string>,
  ): Promise<void> {
    const syncId = form['sync'] ? form['sync'] : null;
    try {
      const created = await this.keys.create(session.accountId, {
        name: form['name'] ?? '',
        scope: form['scope'] ?? '',
        syncId,
      });
      await this.render(response, session, 201, { scope: created.scope, created });
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      await this.render(response, session, 400, {
        scope: isScope(form['scope']) ? form['scope'] : 'read',
        name: form['name'],
        error: error.message,
      });
    }
  }

  @Post(':id/revoke')
  async revoke(@Session() session: ConsoleSession, @Param('id') id: string): Promise<never> {
    if (!isId('apiKey', id)) throw consoleNotFound();
    const revoked = await this.keys.revoke(id, session.accountId);
    const notice = `Key "${revoked.name}" is revoked: it no longer works.`;
    throw new ConsoleRedirect(`/app/settings/api-keys?notice=${encodeURIComponent(notice)}`);
  }

  private async render(
    response: Response,
    session: ConsoleSession,
    status: number,
    input: { scope: string; notice?: string; error?: string; name?: string; created?: CreatedApiKey },
  ): Promise<void> {
    const [keys, syncs] = await Promise.all([
      this.keys.list(session.accountId),
      this.syncs.list(consoleAuth(session), 100, undefined),
    ]);
    const body = html`<h1>API keys</h1>
      <p class="lead">
        Keys let an agent or a script use Lockstep's API (<code>Authorization: Bearer &lt;key&gt;</code>).
        Give each its own key with the smallest scope it needs.
      </p>
      ${input.created ? newKeyCard(input.created) : null} ${createKeyForm(session, input, syncs.data)}
      <section aria-labelledby="your-keys">
        <h2 id="your-keys">Your keys</h2>
        ${
          keys.length === 0
            ? html`<p class="muted">No keys yet.</p>`
            : html`<table>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Scope</th>
                    <th scope="col">Limited to</th>
                    <th scope="col">Created</th>
                    <th scope="col">Last used</th>
                    <th scope="col">State</th>
                    <th scope="col"><span class="visually-hidden">Actions</span></th>
                  </tr>
                </thead>
                <tbody>
                  ${keys.map((key) => this.row(session, key))}
                </tbody>
              </table>`
        }
      </section>`;
    sendPage(
      response,
      status,
      layout({ title: 'API keys', session, nav: 'keys', body, notice: input.notice, error: input.error }),
    );
  }

  private row(session: ConsoleSession, key: ApiKeyView) {
    return html`<tr data-key="${key.id}">
      <td>${key.name}<br /><code>${key.id}</code></td>
      <td>${key.scope}</td>
      <td>${key.sync_id ? html`<a href="/app/syncs/${key.sync_id}">${key.sync_id}</a>` : 'all syncs'}</td>
      <td>${when(key.created_at)}</td>
      <td>${when(key.last_used_at, 'never')}</td>
      <td>${key.revoked_at ? html`${badge('revoked')} ${when(key.revoked_at)}` : badge('active')}</td>
      <td>
        ${
          key.revoked_at
            ? null
            : html`<form method="post" action="/app/settings/api-keys/${key.id}/revoke" class="inline">
                ${csrfInput(session)}<button type="submit" class="danger" aria-label="Revoke key ${key.name}">
                  Revoke
                </button>
              </form>`
        }
      </td>
    </tr>`;
  }
}

/** The key just created, with its secret: shown this once. */
function newKeyCard(created: CreatedApiKey): SafeHtml {
  return html`<section class="card" aria-labelledby="new-key">
    <h2 id="new-key">Your new key "${created.name}"</h2>
    <p class="warning">Copy the secret now: it is shown only once and cannot be recovered.</p>
    <p class="secret" id="new-secret">${created.secret}</p>
    <dl class="facts">
      <dt>Scope</dt>
      <dd>${created.scope}</dd>
      <dt>Limited to</dt>
      <dd>${created.sync_id ?? 'all syncs'}</dd>
    </dl>
  </section>`;
}

/** The form that creates a key: a name, a scope (the one asked for preselected) and optionally one sync. */
function createKeyForm(
  session: ConsoleSession,
  input: { scope: string; name?: string },
  syncs: { id: string; name: string }[],
): SafeHtml {
  return html`<section class="card" aria-labelledby="create-key">
    <h2 id="create-key">Create a key</h2>
    <form method="post" action="/app/settings/api-keys">
      ${csrfInput(session)}
      <label for="key-name"
        >Name <span class="hint">So you recognise it later, for example the agent's name.</span></label
      >
      <input id="key-name" name="name" type="text" required maxlength="100" value="${input.name ?? ''}" />
      <fieldset>
        <legend>Scope</legend>
        ${SCOPES.map(
          (scope) =>
            html`<label class="choice"
              ><input
                type="radio"
                name="scope"
                value="${scope}"
                ${scope === input.scope ? html` checked` : null}
              />
              ${SCOPE_HELP[scope]}</label
            >`,
        )}
      </fieldset>
      <label for="key-sync"
        >Limit to one sync <span class="hint">Optional. A limited key sees only that sync.</span></label
      >
      <select id="key-sync" name="sync">
        <option value="">All syncs</option>
        ${syncs.map((sync) => html`<option value="${sync.id}">${sync.name} (${sync.id})</option>`)}
      </select>
      <div class="actions"><button type="submit">Create key</button></div>
    </form>
  </section>`;
}
