import type { MappingsSchema, SchemaField, SchemaTable, SideName, ValidationIssue } from '@lockstep/domain';

/**
 * The mappings editor's form model and its two conversions: the stored document (as the API reads it, remote
 * ids) to the form, and the posted form to a candidate document for the mappings service (validate, PUT).
 * Rows a person left blank are dropped from the document; issue paths of the document are translated back to
 * the form's rows, so each issue is shown at the control it is about.
 */

/** The select value that stands for `{create: {name}}`; the name comes from the matching text input. */
export const CREATE = '+create';

export const DIRECTIONS = ['two_way', 'left_to_right', 'right_to_left'] as const;
export type Direction = (typeof DIRECTIONS)[number];

/** Upper bounds on what one form may carry (a posted form is untrusted input). */
const MAX_PAIRS = 100;
const MAX_FIELDS = 300;

export interface RefChoice {
  /** A remote id, CREATE, or '' (nothing picked yet). */
  pick: string;
  /** The name of the table or field to create when `pick` is CREATE. */
  createName: string;
}

export interface FieldRow {
  left: RefChoice;
  right: RefChoice;
  /** '' = the table pair's direction. */
  direction: Direction | '';
}

export interface SideSettingsForm {
  deleteBehavior: 'sync' | 'do_nothing';
  view: string;
}

export interface PairForm {
  left: RefChoice;
  right: RefChoice;
  direction: Direction;
  settings: Record<SideName, SideSettingsForm>;
  fields: FieldRow[];
}

export interface EditorForm {
  /** The mappings revision the person started from (sent as If-Match). */
  revision: number;
  pairs: PairForm[];
  deleteApproval: 'review_required' | 'auto_approve';
}

/** A candidate document and, per document index, the form index it came from. */
export interface Candidate {
  document: { tables: Record<string, unknown>[] };
  pairIndex: number[];
  fieldIndex: number[][];
}

type Json = Record<string, unknown>;

const isDirection = (value: unknown): value is Direction => DIRECTIONS.includes(value as Direction);
const blank = (choice: RefChoice) => choice.pick === '';
const choice = (pick = '', createName = ''): RefChoice => ({ pick, createName });

export const emptyPair = (): PairForm => ({
  left: choice(),
  right: choice(),
  direction: 'two_way',
  settings: { left: { deleteBehavior: 'sync', view: '' }, right: { deleteBehavior: 'sync', view: '' } },
  fields: [],
});

export const emptyField = (): FieldRow => ({ left: choice(), right: choice(), direction: '' });

function refChoice(reference: unknown): RefChoice {
  if (typeof reference === 'string') return choice(reference);
  const name = (reference as { create?: { name?: unknown } } | null)?.create?.name;
  return choice(CREATE, typeof name === 'string' ? name : '');
}

function settingsOf(raw: unknown): SideSettingsForm {
  const object = (raw ?? {}) as Json;
  return {
    deleteBehavior: object['record_delete_behavior'] === 'do_nothing' ? 'do_nothing' : 'sync',
    view: typeof object['view'] === 'string' ? object['view'] : '',
  };
}

/** The form of a stored document as `GET /mappings` renders it. */
export function formFromDocument(
  document: { tables: Json[] },
  revision: number,
  deleteApproval: EditorForm['deleteApproval'],
): EditorForm {
  return {
    revision,
    deleteApproval,
    pairs: document.tables.map((pair) => ({
      left: refChoice(pair['left_table']),
      right: refChoice(pair['right_table']),
      direction: isDirection(pair['direction']) ? pair['direction'] : 'two_way',
      settings: { left: settingsOf(pair['left']), right: settingsOf(pair['right']) },
      fields: ((pair['fields'] ?? []) as Json[]).map((field) => ({
        left: refChoice(field['left_field']),
        right: refChoice(field['right_field']),
        // `invalid` (schema drift) is no direction a save can send: the row falls back to the table's.
        direction: isDirection(field['direction']) ? field['direction'] : '',
      })),
    })),
  };
}

function postedChoice(form: Record<string, string>, name: string): RefChoice {
  return choice((form[name] ?? '').trim(), (form[`${name}_create`] ?? '').trim());
}

/** The form as posted: counts `pairs` and `p{i}_fields`, then one control per setting (see the editor). */
export function formFromPost(form: Record<string, string>): EditorForm {
  const pairs: PairForm[] = [];
  const count = Math.min(Number(form['pairs']) || 0, MAX_PAIRS);
  for (let i = 0; i < count; i += 1) {
    if (form[`p${i}_remove`]) continue;
    const p = `p${i}`;
    const fields: FieldRow[] = [];
    const fieldCount = Math.min(Number(form[`${p}_fields`]) || 0, MAX_FIELDS);
    for (let j = 0; j < fieldCount; j += 1) {
      if (form[`${p}_f${j}_remove`]) continue;
      const direction = form[`${p}_f${j}_direction`];
      fields.push({
        left: postedChoice(form, `${p}_f${j}_left`),
        right: postedChoice(form, `${p}_f${j}_right`),
        direction: isDirection(direction) ? direction : '',
      });
    }
    const settings = (side: SideName): SideSettingsForm => ({
      deleteBehavior: form[`${p}_${side}_delete`] === 'do_nothing' ? 'do_nothing' : 'sync',
      view: (form[`${p}_${side}_view`] ?? '').trim(),
    });
    const direction = form[`${p}_direction`];
    pairs.push({
      left: postedChoice(form, `${p}_left_table`),
      right: postedChoice(form, `${p}_right_table`),
      direction: isDirection(direction) ? direction : 'two_way',
      settings: { left: settings('left'), right: settings('right') },
      fields,
    });
  }
  return {
    revision: Number(form['revision']) || 0,
    pairs,
    deleteApproval: form['delete_approval'] === 'auto_approve' ? 'auto_approve' : 'review_required',
  };
}

/** `{create: {name}}` for CREATE, else the picked remote id ('' stays '' and is refused at its path). */
function reference(ref: RefChoice): unknown {
  return ref.pick === CREATE ? { create: { name: ref.createName } } : ref.pick;
}

/** The document a save sends: blank pairs and blank field rows left out. */
export function candidateOf(form: EditorForm): Candidate {
  const candidate: Candidate = { document: { tables: [] }, pairIndex: [], fieldIndex: [] };
  form.pairs.forEach((pair, i) => {
    if (blank(pair.left) && blank(pair.right) && pair.fields.every((f) => blank(f.left) && blank(f.right)))
      return;
    const fields: Json[] = [];
    const fieldIndex: number[] = [];
    pair.fields.forEach((field, j) => {
      if (blank(field.left) && blank(field.right)) return;
      fields.push({
        left_field: reference(field.left),
        right_field: reference(field.right),
        ...(field.direction ? { direction: field.direction } : {}),
      });
      fieldIndex.push(j);
    });
    const settings = (side: SideName) => ({
      record_delete_behavior: pair.settings[side].deleteBehavior,
      ...(pair.settings[side].view ? { view: pair.settings[side].view } : {}),
    });
    candidate.document.tables.push({
      left_table: reference(pair.left),
      right_table: reference(pair.right),
      direction: pair.direction,
      left: settings('left'),
      right: settings('right'),
      fields,
    });
    candidate.pairIndex.push(i);
    candidate.fieldIndex.push(fieldIndex);
  });
  return candidate;
}

/** An issue's document path in the form's numbering (`/tables/3/fields/1/...` of the rows as shown). */
export function formPath(candidate: Candidate, path: string): string {
  const match = /^\/tables\/(\d+)(\/fields\/(\d+))?(.*)$/.exec(path);
  if (!match) return path;
  const pair = Number(match[1]);
  const formPair = candidate.pairIndex[pair] ?? pair;
  if (match[3] === undefined) return `/tables/${formPair}${match[4] ?? ''}`;
  const field = Number(match[3]);
  const formField = candidate.fieldIndex[pair]?.[field] ?? field;
  return `/tables/${formPair}/fields/${formField}${match[4] ?? ''}`;
}

/** Where issues are shown: the document, a pair, a pair's table or side settings, its fields, a field row. */
export function anchorsOf(form: EditorForm): string[] {
  const anchors = ['', '/tables'];
  form.pairs.forEach((pair, i) => {
    const p = `/tables/${i}`;
    anchors.push(p, `${p}/left_table`, `${p}/right_table`, `${p}/left`, `${p}/right`, `${p}/fields`);
    pair.fields.forEach((_, j) => anchors.push(`${p}/fields/${j}`));
  });
  return anchors;
}

/** The anchor an issue path is shown at: the longest anchor it equals or lies under. */
export function anchorOf(path: string, anchors: string[]): string {
  let best = '';
  for (const anchor of anchors)
    if ((path === anchor || path.startsWith(`${anchor}/`)) && anchor.length > best.length) best = anchor;
  return best;
}

export interface PlacedIssue {
  anchor: string;
  severity: ValidationIssue['severity'];
  code: string;
  message: string;
}

/** Issues of a candidate document placed at the form's anchors. */
export function placeIssues(
  form: EditorForm,
  candidate: Candidate,
  issues: ValidationIssue[],
): PlacedIssue[] {
  const anchors = anchorsOf(form);
  return issues.map((issue) => ({
    anchor: anchorOf(formPath(candidate, issue.path), anchors),
    severity: issue.severity,
    code: issue.code,
    message: issue.message,
  }));
}

/** The element id of an anchor's issue list (`issues-tables-0-fields-1`; `issues-document` for ''). */
export const issuesId = (anchor: string): string =>
  anchor === '' ? 'issues-document' : `issues${anchor.replace(/\//g, '-')}`;

/** A table of a side by remote id (live ones first). */
export function tableOf(schema: MappingsSchema, side: SideName, remoteId: string): SchemaTable | null {
  const tables = schema[side].tables.filter((t) => t.remoteId === remoteId);
  return tables.find((t) => !t.orphaned) ?? tables[0] ?? null;
}

export function fieldOf(table: SchemaTable | null, remoteId: string): SchemaField | null {
  const fields = (table?.fields ?? []).filter((f) => f.remoteId === remoteId);
  return fields.find((f) => !f.orphaned) ?? fields[0] ?? null;
}

/**
 * Rows for a pair that has none yet once both its tables are chosen: for a table created on one side, every
 * readable field of the other side's table, created under its own name; for two existing tables, the fields
 * with the same name (case-insensitive) on both sides. A person then removes or changes what they do not want.
 */
export function suggestFields(pair: PairForm, schema: MappingsSchema): FieldRow[] {
  if (pair.fields.length > 0) return [];
  const create = (['left', 'right'] as const).find((side) => pair[side].pick === CREATE);
  if (create) {
    const other = create === 'left' ? 'right' : 'left';
    const source = tableOf(schema, other, pair[other].pick);
    return (
      (source?.fields ?? [])
        // Left out: what the domain refuses to create (unsupported types; links where the side cannot make them).
        .filter(
          (f) =>
            !f.orphaned &&
            f.read &&
            f.typeClass !== 'unsupported' &&
            (f.typeClass !== 'relation' || schema[create].capabilities.createRelations === true),
        )
        .map((f) => ({
          ...emptyField(),
          [create]: choice(CREATE, f.name),
          [other]: choice(f.remoteId),
        }))
    );
  }
  const left = tableOf(schema, 'left', pair.left.pick);
  const right = tableOf(schema, 'right', pair.right.pick);
  if (!left?.fields || !right?.fields) return [];
  return left.fields.flatMap((l) => {
    const r = right.fields!.find((f) => !f.orphaned && f.name.toLowerCase() === l.name.toLowerCase());
    return !l.orphaned && r ? [{ ...emptyField(), left: choice(l.remoteId), right: choice(r.remoteId) }] : [];
  });
}
