import type { AuthFieldDeclaration } from '@lockstep/connectors-core';
import { html, type SafeHtml } from './html';

/** A timestamp for people: `2026-01-31 12:00 UTC` in a `<time>` element (machine value in `datetime`). */
export function when(iso: string | null | undefined, empty = '—'): SafeHtml {
  if (!iso) return html`${empty}`;
  const text = iso.replace('T', ' ').replace(/:\d\d(\.\d+)?Z$/, ' UTC');
  return html`<time datetime="${iso}">${text}</time>`;
}

const BADGES: Record<string, string> = {
  active: 'ok',
  ok: 'ok',
  done: 'ok',
  draft: 'warn',
  paused: 'warn',
  preparing: 'warn',
  running: 'warn',
  awaiting_review: 'warn',
  error: 'bad',
  revoked: 'bad',
};

/** A status word in a coloured pill (the word itself carries the meaning, not the colour). */
export function badge(word: string, label = word.replace(/_/g, ' ')): SafeHtml {
  return html`<span class="badge ${BADGES[word] ?? ''}">${label}</span>`;
}

export function sideLabel(side: string): string {
  return side === 'left' ? 'Left' : 'Right';
}

/** A direction as an arrow with words for screen readers. */
export function direction(value: string | undefined): SafeHtml {
  switch (value) {
    case 'left_to_right':
      return html`<span class="arrow" title="left to right"
        >→<span class="visually-hidden"> left to right</span></span
      >`;
    case 'right_to_left':
      return html`<span class="arrow" title="right to left"
        >←<span class="visually-hidden"> right to left</span></span
      >`;
    case 'both':
    case 'two_way':
      return html`<span class="arrow" title="both ways"
        >⇄<span class="visually-hidden"> both ways</span></span
      >`;
    case 'invalid':
      return html`<span class="badge bad">invalid</span>`;
    default:
      return html`${value ?? '—'}`;
  }
}

/** A JSON-ish value for a table cell. */
export function value(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v;
  return JSON.stringify(v);
}

/**
 * The inputs of a connector's credential fields (`auth_<id>` form names), each with its label and help link:
 * a select for a field with options, else a text input (password unless the field is not secret).
 */
export function credentialInputs(fields: AuthFieldDeclaration[], values: Record<string, string>): SafeHtml[] {
  return fields.map((field) => {
    const inputId = `auth-${field.id}`;
    const option = (o: string) =>
      html`<option value="${o}" ${values[field.id] === o ? html` selected` : null}>${o}</option>`;
    return html`<label for="${inputId}"
        >${field.label}${field.optional ? html` <span class="hint">Optional.</span>` : null}
        <span class="hint"
          ><a href="${field.help.url}" target="_blank" rel="noopener noreferrer">${field.help.label}</a></span
        ></label
      >
      ${
        field.options
          ? html`<select id="${inputId}" name="auth_${field.id}">
              ${field.optional ? html`<option value="">—</option>` : null}${field.options.map(option)}
            </select>`
          : html`<input
              id="${inputId}"
              name="auth_${field.id}"
              type="${field.secret === false ? 'text' : 'password'}"
              placeholder="${field.placeholder}"
              autocomplete="off"
              ${field.optional ? null : html` required`}
              value="${values[field.id] ?? ''}"
            />`
      }`;
  });
}
