import type { ConnectorDeclaration } from '@lockstep/connectors-core';
import type { MappingsSchema, SchemaField, SideName } from '@lockstep/domain';
import { html, type SafeHtml } from './html';
import { fieldOf, tableOf } from './mappings-form';

/** A mapped table pair as the review page shows it (remote ids, as `GET /mappings` reads them). */
export interface PairView {
  index: number;
  leftTable: string;
  rightTable: string;
  direction: string;
  fields: { left: string; right: string; direction: string }[];
}

/** A connector's sentence with its `backticked` words as code. */
export function words(text: string): SafeHtml {
  return html`${text.split('`').map((part, i) => (i % 2 === 1 ? html`<code>${part}</code>` : part))}`;
}

/** `left=right` of a field pair, as the match field select sends it. */
export const matchValue = (field: { left: string; right: string }): string => `${field.left}=${field.right}`;

/**
 * A field that identifies a record on its side: unique (the primary key, or a unique constraint the
 * connector reports as `type_details.unique`) and always present (required, or the primary key, which is
 * never null).
 */
function identifies(field: SchemaField | null): boolean {
  if (!field || field.orphaned || !field.read) return false;
  const unique = field.primary || field.typeDetails?.['unique'] === true;
  return unique && (field.required || field.primary);
}

/**
 * The match field the review page suggests for a pair: the first mapped field pair that identifies records
 * on both sides, a declared unique field before a primary key (two apps rarely share key values, they do
 * share e-mail addresses); null when none does.
 */
export function suggestedMatch(pair: PairView, schema: MappingsSchema): string | null {
  const left = tableOf(schema, 'left', pair.leftTable);
  const right = tableOf(schema, 'right', pair.rightTable);
  const candidates = pair.fields.filter(
    (f) => identifies(fieldOf(left, f.left)) && identifies(fieldOf(right, f.right)),
  );
  const declared = candidates.find(
    (f) => !fieldOf(left, f.left)!.primary || !fieldOf(right, f.right)!.primary,
  );
  const chosen = declared ?? candidates[0];
  return chosen ? matchValue(chosen) : null;
}

export interface SideEffectsInput {
  side: SideName;
  declaration: ConnectorDeclaration | undefined;
  connector: string;
  base: string;
  tables: string[];
}

/**
 * What starting writes into one app, from its connector's declaration (`tableSetup`, the same words the
 * `user_confirmation` instruction uses), and what the saved mappings already wrote.
 */
export function startEffects(input: SideEffectsInput): SafeHtml {
  const setup = input.declaration?.tableSetup;
  const name = input.declaration?.displayName ?? input.connector;
  const tables = input.tables.map((t) => html`<code>${t}</code> `);
  const capture = input.declaration?.capabilities.changeDetection.includes('change_feed')
    ? words(setup?.changeCapture ?? 'what the app needs for Lockstep to notice changes')
    : null;
  return html`<li id="effects-${input.side}"><strong>${input.side === 'left' ? 'Left' : 'Right'}: ${name}</strong> (<code>${input.base}</code>)
<ul>
  <li>Already written when the mappings were saved: the tables and fields marked “create”, and ${words(setup?.serviceIdColumn ?? 'a service id column')} on ${tables.length ? tables : 'no table'}where it was missing.</li>
  <li>Starting installs ${capture ?? 'nothing: changes are found by reading the tables again'}${capture && tables.length ? html` for ${tables}` : null}, then copies records as the mappings say.</li>
</ul></li>`;
}
