import { escapeHtml, html, raw, SafeHtml } from './html';

describe('console html template', () => {
  it.each([
    ['<script>alert(1)</script>', '&lt;script&gt;alert(1)&lt;/script&gt;'],
    [`" onfocus="x`, '&quot; onfocus=&quot;x'],
    [`' onfocus='x`, '&#39; onfocus=&#39;x'],
    ['a & b', 'a &amp; b'],
    ['`tick`', '&#96;tick&#96;'],
    ['plain text', 'plain text'],
  ])('escapes %j', (input, expected) => {
    expect(escapeHtml(input)).toBe(expected);
    expect(html`<p title="${input}">${input}</p>`.value).toBe(`<p title="${expected}">${expected}</p>`);
  });

  it('does not escape nested templates or raw markup, but escapes values inside them', () => {
    const inner = html`<b>${'<i>'}</b>`;
    expect(inner).toBeInstanceOf(SafeHtml);
    expect(html`<p>${inner}${raw('<br>')}</p>`.value).toBe('<p><b>&lt;i&gt;</b><br></p>');
  });

  it('joins arrays and renders null, undefined and false as nothing (0 and true as text)', () => {
    expect(html`<ul>${['<a>', html`<li>b</li>`]}</ul>`.value).toBe('<ul>&lt;a&gt;<li>b</li></ul>');
    expect(html`${null}${undefined}${false}|${0}|${true}`.value).toBe('|0|true');
  });

  it('a string that looks like SafeHtml is still escaped', () => {
    const forged = { value: '<script>' } as unknown as string;
    expect(html`${forged}`.value).toBe('[object Object]');
  });
});
