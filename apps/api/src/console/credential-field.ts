import type { AuthFieldDeclaration } from '@lockstep/connectors-core';
import { html, type SafeHtml } from './html';

export interface CredentialFieldInput {
  /** The element id (the label's `for`). */
  id: string;
  /** The form field name. */
  name: string;
  value: string | undefined;
  /** An error shown at the field, between its label and the input. */
  error?: SafeHtml;
  /** Extra attributes of the input (`aria-invalid`, `aria-describedby`). */
  attrs?: SafeHtml;
}

/**
 * One declared credential field of a connector: its label with the help link, then a select (declared
 * options) or an input (password unless declared not secret). Every console page that asks for credentials
 * renders them with this.
 */
export function credentialField(field: AuthFieldDeclaration, input: CredentialFieldInput): SafeHtml {
  const { id, name, value } = input;
  const attrs = input.attrs ?? null;
  return html`<label for="${id}">${field.label}${field.optional ? html` <span class="hint">Optional.</span>` : null}
  <span class="hint"><a href="${field.help.url}" target="_blank" rel="noopener noreferrer">${field.help.label}</a></span></label>${input.error ?? null}
  ${
    field.options
      ? html`<select id="${id}" name="${name}"${attrs}>${field.optional ? html`<option value="">—</option>` : null}${field.options.map((o) => html`<option value="${o}"${value === o ? html` selected` : null}>${o}</option>`)}</select>`
      : html`<input id="${id}" name="${name}" type="${field.secret === false ? 'text' : 'password'}" placeholder="${field.placeholder}" autocomplete="off"${field.optional ? null : html` required`} value="${value ?? ''}"${attrs}>`
  }`;
}
