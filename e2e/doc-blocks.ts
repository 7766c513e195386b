// Shared by the specs that run documentation code (e2e/readme.spec.ts, e2e/docs.spec.ts): finds the
// ```ts blocks a document marks as tested, and runs one as a module in a plain page whose import map
// names the built ES module bundle `tenon`. Types are stripped by the TypeScript compiler and nothing else
// changes, so what runs is what the reader sees.
import { readFileSync } from 'node:fs';
import { expect } from '@playwright/test';
import type { Page } from '@playwright/test';
import ts from 'typescript';

/** The plain page the blocks run in (an import map maps `tenon` to /static/dist/tenon.js). */
const BLOCK_PAGE = '/static/e2e/pages/readme.html';

/** The ```ts blocks of `file` whose preceding line starts with `mark`, in document order. */
export function markedBlocks(file: string, mark: string): string[] {
  const lines = readFileSync(file, 'utf8').split('\n');
  const blocks: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i]!.startsWith(mark)) continue;
    expect(lines[i + 1], `${file}:${i + 2} opens the marked block`).toBe('```ts');
    const end = lines.indexOf('```', i + 2);
    expect(end, `${file}:${i + 2} the marked block is closed`).toBeGreaterThan(i + 1);
    blocks.push(lines.slice(i + 2, end).join('\n'));
  }
  return blocks;
}

export interface RunningModule {
  /** The values passed to console.log so far, in order (one argument: the value; several: an array). */
  logs(): Promise<unknown[]>;
  /** How many console.log calls arrived so far. */
  count(): number;
  /** Uncaught errors of the page. */
  readonly errors: string[];
}

/** Runs `source` (TypeScript) as a module in a fresh plain page. */
export async function runModule(page: Page, source: string): Promise<RunningModule> {
  const pending: Promise<unknown>[] = [];
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'log') pending.push(Promise.all(m.args().map((a) => a.jsonValue())).then((v) => (v.length === 1 ? v[0] : v)));
  });
  await page.goto(BLOCK_PAGE);
  const js = ts.transpileModule(source, { compilerOptions: { target: ts.ScriptTarget.ESNext, module: ts.ModuleKind.ESNext } }).outputText;
  await page.addScriptTag({ type: 'module', content: js });
  return { logs: () => Promise.all(pending), count: () => pending.length, errors };
}
