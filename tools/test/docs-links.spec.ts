// Every relative link and anchor in README.md and docs/*.md resolves, so moving a section cannot leave a
// reader at a dead end. Anchors follow GitHub's rule (lower case, punctuation dropped, spaces to hyphens, a
// repeated heading gets -1, -2...).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';

const root = join(__dirname, '..', '..');
const files = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replace(/ /g, '-');
}

function anchorsOf(path: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let inCode = false;
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line.trimStart().startsWith('```')) inCode = !inCode;
    const heading = inCode ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = slug(heading[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

function brokenLinks(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8').replace(/```[\s\S]*?```/g, '');
  const broken: string[] = [];
  for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z]+:/.test(target!)) continue;
    const [path, anchor] = target!.split('#') as [string, string | undefined];
    const dest = path ? normalize(join(root, dirname(file), path)) : join(root, file);
    if (!existsSync(dest)) broken.push(`${target}: no such file`);
    else if (anchor && dest.endsWith('.md') && !anchorsOf(dest).has(anchor))
      broken.push(`${target}: no such anchor`);
  }
  return broken;
}

describe('documentation links', () => {
  it.each(files)('%s links only to files and anchors that exist', (file) => {
    expect(brokenLinks(file)).toEqual([]);
  });

  it('finds a broken anchor (the check itself works)', () => {
    expect(anchorsOf(join(root, 'README.md')).has('no-such-heading-anywhere')).toBe(false);
    expect(slug('Keeping it `running` (now)')).toBe('keeping-it-running-now');
  });
});
