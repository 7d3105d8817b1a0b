import type { TableSetupDescription } from '@lockstep/connectors-core';
import type { MappingsSchema, SchemaTable, SideName } from '@lockstep/domain';
import type { ConsoleSession } from './console-session';
import { csrfInput } from './console-session';
import { html, type SafeHtml } from './html';
import { words } from './review-parts';
import {
  CREATE,
  DIRECTIONS,
  type EditorForm,
  type FieldRow,
  fieldOf,
  issuesId,
  type PairForm,
  type PlacedIssue,
  type RefChoice,
  tableOf,
} from './mappings-form';

/** What the editor knows about one side: its app and what its table setup writes (connector declaration). */
export interface EditorSide {
  app: string;
  base: string;
  setup: TableSetupDescription | null;
}

export interface EditorInput {
  syncId: string;
  syncName: string;
  syncStatus: string;
  session: ConsoleSession;
  form: EditorForm;
  schema: MappingsSchema;
  sides: Record<SideName, EditorSide>;
  issues: PlacedIssue[];
  /** Pairs (form indexes) whose semantics were not validated (a structural fault): no "compatible" there. */
  unchecked: number[];
  /** A save refused because the mappings changed meanwhile: the revision they are at now. */
  conflict: { current: number } | null;
}

const SIDE_PAIR: readonly SideName[] = ['left', 'right'];
const DIRECTION_WORDS: Record<string, string> = {
  two_way: 'Both ways ⇄',
  left_to_right: 'Left to right →',
  right_to_left: 'Right to left ←',
};

const selected = (on: boolean) => (on ? html` selected` : null);

/** The issues shown at one anchor (updated in place by the console's script as the person edits). */
export function issueList(anchor: string, issues: PlacedIssue[], complete = false): SafeHtml {
  const here = issues.filter((issue) => issue.anchor === anchor);
  return html`<div class="issues" id="${issuesId(anchor)}" data-issues-for="${anchor}">${here.map(
    (issue) =>
      html`<p class="issue issue-${issue.severity}"><strong>${issue.severity === 'error' ? 'Error' : 'Warning'}:</strong> ${issue.message} <code>${issue.code}</code></p>`,
  )}${complete && here.length === 0 ? html`<p class="issue issue-ok">Types compatible in the mapped direction.</p>` : null}</div>`;
}

/** Field rows whose both sides are chosen: they say "compatible" when no issue is about them. */
export function completeRows(form: EditorForm, unchecked: number[]): string[] {
  return form.pairs.flatMap((pair, i) =>
    pair.fields.flatMap((field, j) =>
      unchecked.includes(i) ? [] : field.left.pick && field.right.pick ? [`/tables/${i}/fields/${j}`] : [],
    ),
  );
}

function refSelect(input: {
  id: string;
  name: string;
  label: SafeHtml | string;
  labelHidden: boolean;
  choice: RefChoice;
  options: { value: string; text: string }[];
  createText: string | null;
  describedBy: string;
  reload?: boolean;
}): SafeHtml {
  const { id, choice } = input;
  const creating = choice.pick === CREATE;
  return html`<label for="${id}"${input.labelHidden ? html` class="visually-hidden"` : null}>${input.label}</label>
<select id="${id}" name="${input.name}" aria-describedby="${input.describedBy}"${input.reload ? html` data-reload` : null}>
  <option value="">Choose…</option>
  ${input.options.map((o) => html`<option value="${o.value}"${selected(o.value === choice.pick)}>${o.text}</option>`)}
  ${input.createText ? html`<option value="${CREATE}"${selected(creating)}>${input.createText}</option>` : null}
</select>
${
  input.createText
    ? html`<span class="create-name" data-create-for="${id}"${creating ? null : html` data-idle`}><label for="${id}-create" class="hint">Name of the new one (when creating)</label><input type="text" id="${id}-create" name="${input.name}_create" value="${choice.createName}" autocomplete="off"></span>`
    : null
}`;
}

function tableOptions(schema: MappingsSchema, side: SideName) {
  return schema[side].tables
    .filter((t) => !t.orphaned)
    .map((t) => ({ value: t.remoteId, text: t.readOnly ? `${t.name} (view, read-only)` : t.name }));
}

function sideColumn(input: EditorInput, pair: PairForm, i: number, side: SideName): SafeHtml {
  const p = `p${i}_${side}`;
  const table = pair[side].pick === CREATE ? null : tableOf(input.schema, side, pair[side].pick);
  const canCreate = input.schema[side].capabilities.createTables;
  const settings = pair.settings[side];
  return html`<div>
${refSelect({
  id: `${p}_table`,
  name: `${p}_table`,
  label: html`${side === 'left' ? 'Left' : 'Right'} table <span class="hint">${input.sides[side].app}, <code>${input.sides[side].base}</code></span>`,
  labelHidden: false,
  choice: pair[side],
  options: tableOptions(input.schema, side),
  createText: canCreate ? 'Create a new table…' : null,
  describedBy: issuesId(`/tables/${i}/${side}_table`),
  reload: true,
})}
${issueList(`/tables/${i}/${side}_table`, input.issues)}
${table?.views ? viewSelect(p, table, settings.view) : null}
<label for="${p}_delete">When a record is deleted on the other side</label>
<select id="${p}_delete" name="${p}_delete" aria-describedby="${issuesId(`/tables/${i}/${side}`)}">
  <option value="sync"${selected(settings.deleteBehavior === 'sync')}>Delete it here too</option>
  <option value="do_nothing"${selected(settings.deleteBehavior === 'do_nothing')}>Keep it here (delete protection)</option>
</select>
${issueList(`/tables/${i}/${side}`, input.issues)}
</div>`;
}

function viewSelect(p: string, table: SchemaTable, view: string): SafeHtml {
  return html`<label for="${p}_view">View <span class="hint">${table.views!.required ? 'This app syncs the table through one of its views.' : 'Optional: sync only the records of a view.'}</span></label>
<select id="${p}_view" name="${p}_view">
  ${table.views!.required ? null : html`<option value="">The whole table</option>`}
  ${table.views!.options.map((o) => html`<option value="${o.value}"${selected(o.value === view)}>${o.name}</option>`)}
</select>`;
}

function fieldTypeText(input: EditorInput, pair: PairForm, field: FieldRow, side: SideName): string {
  const other: SideName = side === 'left' ? 'right' : 'left';
  const own = fieldOf(tableOf(input.schema, side, pair[side].pick), field[side].pick);
  if (field[side].pick === CREATE) {
    const from = fieldOf(tableOf(input.schema, other, pair[other].pick), field[other].pick);
    return from ? `new, typed from ${from.type}` : 'new';
  }
  if (!own) return '';
  return `${own.type}${own.required ? ', required' : ''}${own.write ? '' : ', read-only'}`;
}

function fieldRow(input: EditorInput, pair: PairForm, i: number, field: FieldRow, j: number): SafeHtml {
  const p = `p${i}_f${j}`;
  const anchor = `/tables/${i}/fields/${j}`;
  const complete = !!field.left.pick && !!field.right.pick && !input.unchecked.includes(i);
  const cell = (side: SideName) => {
    const creatingTable = pair[side].pick === CREATE;
    const table = creatingTable ? null : tableOf(input.schema, side, pair[side].pick);
    const options = (table?.fields ?? [])
      .filter((f) => !f.orphaned)
      .map((f) => ({ value: f.remoteId, text: `${f.name} (${f.type})` }));
    return refSelect({
      id: `${p}_${side}`,
      name: `${p}_${side}`,
      label: `${side === 'left' ? 'Left' : 'Right'} field of row ${j + 1}, table pair ${i + 1}`,
      labelHidden: true,
      choice: field[side],
      options,
      createText:
        creatingTable || input.schema[side].capabilities.createFields ? 'Create a new field…' : null,
      describedBy: issuesId(anchor),
    });
  };
  return html`<tr>
<td>${cell('left')}<span class="hint">${fieldTypeText(input, pair, field, 'left')}</span></td>
<td><label for="${p}_direction" class="visually-hidden">Direction of row ${j + 1}, table pair ${i + 1}</label>
<select id="${p}_direction" name="${p}_direction" aria-describedby="${issuesId(anchor)}">
  <option value="">As the table</option>
  ${DIRECTIONS.map((d) => html`<option value="${d}"${selected(field.direction === d)}>${DIRECTION_WORDS[d]}</option>`)}
</select></td>
<td>${cell('right')}<span class="hint">${fieldTypeText(input, pair, field, 'right')}</span></td>
<td>${issueList(anchor, input.issues, complete)}</td>
<td><label class="choice"><input type="checkbox" name="${p}_remove" value="1"> Remove<span class="visually-hidden"> row ${j + 1}, table pair ${i + 1}</span></label></td>
</tr>`;
}

function pairSection(input: EditorInput, pair: PairForm, i: number): SafeHtml {
  const p = `p${i}`;
  return html`<section class="card" id="pair-${i}" aria-labelledby="pair-${i}-title">
<h2 id="pair-${i}-title">Table pair ${i + 1}</h2>
<input type="hidden" name="${p}_fields" value="${pair.fields.length}">
${issueList(`/tables/${i}`, input.issues)}
<div class="grid">${SIDE_PAIR.map((side) => sideColumn(input, pair, i, side))}</div>
<label for="${p}_direction">Direction</label>
<select id="${p}_direction" name="${p}_direction">
  ${DIRECTIONS.map((d) => html`<option value="${d}"${selected(pair.direction === d)}>${DIRECTION_WORDS[d]}</option>`)}
</select>
<table class="fields"><caption>Field pairs</caption>
<thead><tr><th scope="col">Left field</th><th scope="col">Direction</th><th scope="col">Right field</th><th scope="col">Compatibility</th><th scope="col"><span class="visually-hidden">Remove</span></th></tr></thead>
<tbody>${pair.fields.map((field, j) => fieldRow(input, pair, i, field, j))}</tbody></table>
${pair.fields.length === 0 ? html`<p class="muted">No field pairs yet: choose both tables and press “Load fields”, or add a row.</p>` : null}
${issueList(`/tables/${i}/fields`, input.issues)}
<div class="actions">
  <button type="submit" name="action" value="add_field:${i}" class="secondary">Add a field pair</button>
  <button type="submit" name="action" value="refresh" class="secondary" data-refresh-button>Load fields</button>
  <label class="choice"><input type="checkbox" name="${p}_remove" value="1"> Remove this table pair</label>
</div>
</section>`;
}

/** Per side, what saving these mappings writes into the app, from the form and the connector's declaration. */
export function saveEffectItems(input: Pick<EditorInput, 'form' | 'schema' | 'sides'>): SafeHtml {
  return html`${SIDE_PAIR.map((side) => {
    const named = (names: string[]) => names.filter((n) => n !== '').map((n) => html`<code>${n}</code> `);
    const created = named(
      input.form.pairs.filter((p) => p[side].pick === CREATE).map((p) => p[side].createName),
    );
    const fields = named(
      input.form.pairs.flatMap((p) =>
        p[side].pick === CREATE
          ? []
          : p.fields.filter((f) => f[side].pick === CREATE).map((f) => f[side].createName),
      ),
    );
    const mapped = named(
      input.form.pairs.map((p) =>
        p[side].pick === CREATE
          ? p[side].createName
          : (tableOf(input.schema, side, p[side].pick)?.name ?? ''),
      ),
    );
    const setup = input.sides[side].setup;
    return html`<li><strong>${input.sides[side].app}</strong> (<code>${input.sides[side].base}</code>):
${created.length ? html`creates the table(s) ${created}; ` : null}
${fields.length ? html`creates the field(s) ${fields}; ` : null}
${mapped.length ? html`adds ${words(setup?.serviceIdColumn ?? 'a service id column')} to ${mapped}where it is missing.` : html`nothing (no table mapped).`}</li>`;
  })}`;
}

function saveEffects(input: EditorInput): SafeHtml {
  return html`<section aria-labelledby="effects"><h2 id="effects">What saving writes into the apps</h2>
<ul id="save-effects" aria-live="polite">${saveEffectItems(input)}</ul>
<p class="muted">Saving copies no records; starting the sync (after review) installs change capture and runs the initial sync.</p></section>`;
}

/** The whole editor body. Without JavaScript every button posts the form; with it, issues update as one edits. */
export function editorBody(input: EditorInput): SafeHtml {
  const { form, syncId } = input;
  const base = `/app/syncs/${syncId}`;
  const errors = input.issues.filter((i) => i.severity === 'error').length;
  const warnings = input.issues.length - errors;
  return html`<p class="muted"><a href="/app">Syncs</a> / <a href="${base}">${input.syncName}</a> / mappings</p>
<h1>Mappings of "${input.syncName}"</h1>
<p class="lead">Choose which tables and fields sync, and in which direction. Issues show at the row they are about as you edit; errors block starting the sync, warnings never do.</p>
${input.syncStatus === 'active' ? html`<p class="warning">The sync is active: pause it before changing its mappings (a change returns it to draft for review).</p>` : null}
${
  input.conflict
    ? html`<div class="error" role="alert" id="conflict"><strong>Someone else changed these mappings while you were editing</strong> (you started from revision ${form.revision}; they are at revision ${input.conflict.current} now). Nothing of yours was saved. <a href="${base}/mappings">Load their version</a> and reapply your edit, or replace theirs with yours below.</div>`
    : null
}
<p id="validation-status" role="status" class="muted">${errors} error(s), ${warnings} warning(s).</p>
<form method="post" action="${base}/mappings" id="mappings-form" data-validate="${base}/mappings/check" novalidate>
${csrfInput(input.session)}
<input type="hidden" name="revision" value="${form.revision}">
${input.conflict ? html`<input type="hidden" name="current_revision" value="${input.conflict.current}">` : null}
<input type="hidden" name="pairs" value="${form.pairs.length}">
${issueList('', input.issues)}${issueList('/tables', input.issues)}
${form.pairs.map((pair, i) => pairSection(input, pair, i))}
<div class="actions"><button type="submit" name="action" value="add_pair" class="secondary" id="add-pair">Add a table pair</button></div>
<fieldset><legend>Deletes from either app</legend>
  <label class="choice"><input type="radio" name="delete_approval" value="review_required"${form.deleteApproval === 'review_required' ? html` checked` : null}> Hold deletes for my review (recommended)</label>
  <label class="choice"><input type="radio" name="delete_approval" value="auto_approve"${form.deleteApproval === 'auto_approve' ? html` checked` : null}> Apply deletes automatically</label>
</fieldset>
${saveEffects(input)}
<div class="actions">
  <button type="submit" name="action" value="save" id="save">Save mappings</button>
  ${input.conflict ? html`<button type="submit" name="action" value="overwrite" class="danger" id="overwrite">Replace their changes with mine</button>` : null}
  <button type="submit" name="action" value="check" class="secondary" id="check">Check</button>
  <a href="${base}/review">Review and start</a>
</div>
</form>`;
}
