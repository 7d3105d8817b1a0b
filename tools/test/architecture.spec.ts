import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '..', '..');
const read = (file: string) => readFileSync(join(root, file), 'utf8');
const tagsIn = (text: string) =>
  [...new Set([...text.matchAll(/\btype:[a-z-]+/g)].map((match) => match[0]))].sort();

/** Every project's tags, from the project.json files under apps/, libs/ and tools/. */
function projectTags(): string[] {
  const files = ['apps', 'libs', 'tools'].flatMap((dir) =>
    readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('project.json') && !file.includes('node_modules'))
      .map((file) => join(dir, file)),
  );
  return [...new Set(files.flatMap((file) => JSON.parse(read(file)).tags as string[]))].sort();
}

/** The arrows are stated in eslint.config.mjs and drawn in docs/architecture.md: both name the same tags. */
describe('architecture: tags in the projects, the lint rules and the picture', () => {
  const eslint = read('eslint.config.mjs');
  const sourceTags = [...eslint.matchAll(/sourceTag: '([^']+)'/g)].map((match) => match[1]!).sort();

  it('gives every project tag exactly one rule, and the rules name no other tag', () => {
    expect(sourceTags).toEqual(projectTags());
    expect(new Set(sourceTags).size).toBe(sourceTags.length);
    expect(tagsIn(eslint)).toEqual(projectTags());
  });

  it('draws every tag in docs/architecture.md and no other', () => {
    expect(tagsIn(read('docs/architecture.md'))).toEqual(sourceTags);
  });
});

/** An app's e2e tests and their helpers live in its test/ folder; src/ holds what ships and its unit specs. */
describe('architecture: where an app keeps its e2e tests', () => {
  it('finds no *.e2e-spec.ts and no testing/ folder under apps/*/src', () => {
    const misplaced = readdirSync(join(root, 'apps'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .flatMap((app) =>
        readdirSync(join(root, 'apps', app.name, 'src'), { recursive: true, encoding: 'utf8' })
          .filter((file) => file.endsWith('.e2e-spec.ts') || file.split('/').includes('testing'))
          .map((file) => `apps/${app.name}/src/${file}`),
      );
    expect(misplaced).toEqual([]);
  });
});
