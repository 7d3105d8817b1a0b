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
      return html`<span class="arrow" title="left to right">→<span class="visually-hidden"> left to right</span></span>`;
    case 'right_to_left':
      return html`<span class="arrow" title="right to left">←<span class="visually-hidden"> right to left</span></span>`;
    case 'both':
    case 'two_way':
      return html`<span class="arrow" title="both ways">⇄<span class="visually-hidden"> both ways</span></span>`;
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
 * A timestamp to the second: `2026-01-31 12:00:05 UTC` in a `<time>` element, which the console's script
 * shows in the viewer's time zone (`data-local`).
 */
export function whenExact(iso: string | null | undefined, empty = '—'): SafeHtml {
  if (!iso) return html`${empty}`;
  const text = iso.replace('T', ' ').replace(/(\.\d+)?Z$/, ' UTC');
  return html`<time datetime="${iso}" data-local>${text}</time>`;
}
