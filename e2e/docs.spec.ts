// Plan: docs/guide.md cannot silently go stale (G6-*, DP-state-docs).
// 1. Runnable examples: every ```ts block marked `<!-- tested: e2e/docs.spec.ts (ID) -->` runs as written
//    (types stripped, nothing else) as a module in a plain page where `tenon` is the built ES module
//    bundle. Oracle: each `console.log(...); // => JSON` line of the block logged exactly that JSON, in
//    order, nothing else was logged, and the page raised no error. Each block's marker names the
//    guarantee its test below carries, and the number of blocks is fixed here, so a block can be neither
//    added unrun nor dropped unnoticed.
// 2. Checked tables (`<!-- checked NAME: ... -->`): their first-column entries are compared with the
//    implementation: outcome kinds, scoped outcome kinds, chain member states, descriptor and session states with the shipped
//    declarations (dist/types, read by the TypeScript checker); error codes with ERROR_CODES and every
//    documented reason with the reason literals of src/; the submission-API table with the public members
//    of the shipped classes, and each row's codes with the codes its source (and the private members and
//    constructors it calls) throws.
// 3. Interop: the isolation headers the guide tells people to send are the ones tenon's own servers send.
import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import ts from 'typescript';
import { crossOriginIsolationHeaders } from '../scripts/chromium.config.js';
import { markedBlocks, runModule } from './doc-blocks.js';

const GUIDE = 'docs/guide.md';
const MARK = '<!-- tested: e2e/docs.spec.ts';
const guide = readFileSync(GUIDE, 'utf8');
const blocks = markedBlocks(GUIDE, MARK);
/** The guarantee each marked block names, in document order. */
const blockIds = [...guide.matchAll(/^<!-- tested: e2e\/docs\.spec\.ts \(([A-Za-z0-9-]+)\) -->$/gm)].map((m) => m[1]!);
/** Logged last by every block (appended by this spec), so the end of a block is seen, not guessed. */
const DONE = '__guide-block-done__';
const ANNOTATION = '// => ';

/** The built ES module bundle, as Node imports it (built before the e2e lane runs). */
async function shippedModule(): Promise<Record<string, unknown>> {
  return (await import(pathToFileURL(resolve('dist/tenon.js')).href)) as Record<string, unknown>;
}

/** The values a block promises to log: the JSON after `// => ` on each console.log line, in order. */
function promisedLogs(block: string): unknown[] {
  return block
    .split('\n')
    .filter((line) => line.includes('console.log('))
    .map((line) => {
      const at = line.indexOf(ANNOTATION);
      expect(at, `every console.log line is annotated: ${line.trim()}`).toBeGreaterThan(0);
      return JSON.parse(line.slice(at + ANNOTATION.length)) as unknown;
    });
}

async function runBlock(page: Page, index: number, id: string): Promise<void> {
  expect(blockIds[index], `block ${index} names the guarantee its test carries`).toBe(id);
  const block = blocks[index]!;
  const promised = promisedLogs(block);
  expect(promised.length).toBeGreaterThan(0);
  const run = await runModule(page, `${block}\nconsole.log(${JSON.stringify(DONE)});\n`);
  await expect
    .poll(async () => run.errors.length > 0 || (await run.logs()).at(-1) === DONE, { timeout: 45_000, message: `block ${index} ran to its end` })
    .toBe(true);
  expect(run.errors).toEqual([]);
  expect(await run.logs()).toEqual([...promised, DONE]);
}

// ---------------------------------------------------------------------------------------------------
// tables

/** First-column entries (backticked names) of the table that follows `<!-- checked NAME: ... -->`. */
function checkedTable(name: string): { keys: string[][]; rows: string[][] } {
  const lines = guide.split('\n');
  const at = lines.findIndex((l) => l.startsWith(`<!-- checked ${name}:`));
  expect(at, `the guide has the checked table ${name}`).toBeGreaterThanOrEqual(0);
  const rows: string[][] = [];
  for (let i = at + 3; i < lines.length && lines[i]!.startsWith('|'); i++) {
    rows.push(lines[i]!.split(/(?<!\\)\|/).slice(1, -1).map((c) => c.trim()));
  }
  expect(rows.length, `table ${name} has rows`).toBeGreaterThan(0);
  return { keys: rows.map((r) => ticked(r[0]!)), rows };
}

/** The `backticked` words of a table cell. */
function ticked(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
}

const sorted = (xs: Iterable<string>): string[] => [...new Set(xs)].sort();

interface Declarations {
  literals(name: string, property?: string): string[];
}
let declarationsRead: Declarations | undefined;

/** The shipped declarations, read by the TypeScript checker (once per spec run: it is slow). */
function declarations(): Declarations {
  declarationsRead ??= readDeclarations();
  return declarationsRead;
}

function readDeclarations(): Declarations {
  const program = ts.createProgram(['dist/types/index.d.ts'], { noEmit: true, skipLibCheck: true, strict: true, types: [], lib: ['lib.esnext.d.ts', 'lib.dom.d.ts'] });
  const checker = program.getTypeChecker();
  const file = program.getSourceFile('dist/types/index.d.ts')!;
  const exports = checker.getExportsOfModule(checker.getSymbolAtLocation(file)!);
  const literalsOf = (type: ts.Type): string[] => (type.isUnion() ? type.types : [type]).map((t) => (t.isStringLiteral() ? t.value : `<${checker.typeToString(t)}>`));
  return {
    literals(name, property) {
      const symbol = exports.find((s) => s.name === name);
      expect(symbol, `${name} is exported`).toBeDefined();
      const target = symbol!.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol!) : symbol!;
      const type = checker.getDeclaredTypeOfSymbol(target);
      if (property === undefined) return literalsOf(type);
      if (type.isUnion()) return type.types.flatMap((member) => literalsOf(checker.getTypeOfSymbol(member.getProperty(property)!)));
      return literalsOf(checker.getTypeOfSymbol(type.getProperty(property)!));
    },
  };
}

let literalsRead: Set<string> | undefined;

/** Every string literal of src/, as the TypeScript parser reads them (a documented reason must be one). */
function sourceLiterals(): Set<string> {
  if (literalsRead !== undefined) return literalsRead;
  const found = new Set<string>();
  const collect = (n: ts.Node): void => {
    if (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) found.add(n.text);
    ts.forEachChild(n, collect);
  };
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) collect(ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.ESNext, true));
    }
  };
  walk('src');
  literalsRead = found;
  return found;
}

/** A word of a table cell that names a code (E...) or a reason (kebab-case, or a seed name). */
const CODE = /^E[A-Z]+$/;
const REASON = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$|^NotProvablyDisjoint$/;

/**
 * Codes each public member of the submission layer throws itself: `TenonError('CODE'` in its body and in
 * the bodies of the same class's members and the constructors (`new Class(`) it reaches. Calls into other
 * layers are not followed (the guide marks those codes "from storage").
 */
function thrownCodes(): Map<string, Set<string>> {
  const files = ['runtime.ts', 'outcome.ts', 'graph.ts', 'pool.ts'].map((f) => ts.createSourceFile(f, readFileSync(join('src/submit', f), 'utf8'), ts.ScriptTarget.ESNext, true));
  type Body = { node: ts.Node; owner: string | undefined };
  const members = new Map<string, Body>();
  const nameOf = (n: ts.PropertyName | ts.PrivateIdentifier | undefined): string | undefined => (n !== undefined && (ts.isIdentifier(n) || ts.isPrivateIdentifier(n)) ? n.text : undefined);
  for (const file of files) {
    for (const statement of file.statements) {
      if (ts.isFunctionDeclaration(statement) && statement.name !== undefined) members.set(statement.name.text, { node: statement, owner: undefined });
      if (!ts.isClassDeclaration(statement) || statement.name === undefined) continue;
      const cls = statement.name.text;
      for (const m of statement.members) {
        if (ts.isConstructorDeclaration(m)) members.set(`${cls}.constructor`, { node: m, owner: cls });
        else if ((ts.isMethodDeclaration(m) || ts.isGetAccessorDeclaration(m)) && nameOf(m.name) !== undefined) members.set(`${cls}.${nameOf(m.name)!}`, { node: m, owner: cls });
      }
    }
  }
  const direct = (key: string): { codes: Set<string>; reaches: Set<string> } => {
    const { node, owner } = members.get(key)!;
    const codes = new Set<string>();
    const reaches = new Set<string>();
    const visit = (n: ts.Node): void => {
      if (ts.isNewExpression(n) && ts.isIdentifier(n.expression)) {
        const first = n.arguments?.[0];
        if (n.expression.text === 'TenonError' && first !== undefined && ts.isStringLiteral(first)) codes.add(first.text);
        else if (members.has(`${n.expression.text}.constructor`)) reaches.add(`${n.expression.text}.constructor`);
      }
      if (ts.isCallExpression(n)) {
        const callee = n.expression;
        if (ts.isPropertyAccessExpression(callee) && owner !== undefined) {
          const target = `${owner}.${callee.name.text}`;
          const onThis = callee.expression.kind === ts.SyntaxKind.ThisKeyword;
          if ((onThis || ts.isPrivateIdentifier(callee.name)) && members.has(target)) reaches.add(target);
        } else if (ts.isIdentifier(callee) && members.has(callee.text) && members.get(callee.text)!.owner === undefined) reaches.add(callee.text);
      }
      ts.forEachChild(n, visit);
    };
    visit(node);
    return { codes, reaches };
  };
  const result = new Map<string, Set<string>>();
  for (const key of members.keys()) {
    const codes = new Set<string>();
    const seen = new Set<string>([key]);
    const todo = [key];
    while (todo.length > 0) {
      const d = direct(todo.pop()!);
      for (const c of d.codes) codes.add(c);
      for (const r of d.reaches) if (!seen.has(r)) todo.push(r), seen.add(r);
    }
    result.set(key, codes);
  }
  return result;
}

// ---------------------------------------------------------------------------------------------------
// runnable examples (the block count is part of the contract: see the plan)

test('[G6-submit-docs] the guide holds exactly the tested blocks this spec runs', () => {
  expect(blockIds).toEqual(['G6-submit-docs', 'G6-submit-docs', 'G6-submit-state-tables', 'G6-submit-state-tables', 'G6-submit-docs', 'DP-state-docs', 'G6-submit-errors-documented', 'G6-interop-docs']);
  expect(blocks.length).toBe(blockIds.length);
});

test('[G6-submit-docs] guide: a detached submission moves its group in and extraction gives everything back', async ({ page }) => {
  await runBlock(page, 0, 'G6-submit-docs');
});

test('[G6-submit-docs] guide: scoped execution returns after retirement on the host and is refused on WebGPU', async ({ page }) => {
  await runBlock(page, 1, 'G6-submit-docs');
});

test('[G6-submit-state-tables] guide: every submission state is reached as its table says (rejected, retired-failed, completed, completion-unproven)', async ({ page }) => {
  await runBlock(page, 2, 'G6-submit-state-tables');
});

test('[G6-submit-state-tables] guide: a chain passes its group on (passed-on, then completed with readbacks proven by stamps), a parked member is passed on, an ended chain refuses more', async ({ page }) => {
  await runBlock(page, 3, 'G6-submit-state-tables');
});

test('[G6-submit-docs] guide: a disposed handle still retires and releases; pool capability ids serve one taker', async ({ page }) => {
  await runBlock(page, 4, 'G6-submit-docs');
});

test('[DP-state-docs] guide: descriptors go open -> closed / aborted / torn-down and streams report EOF and ECONNRESET as documented', async ({ page }) => {
  await runBlock(page, 5, 'DP-state-docs');
});

test('[G6-submit-errors-documented] guide: errors carry their code, a failed call changes nothing, ERROR_CODES is the whole list', async ({ page }) => {
  await runBlock(page, 6, 'G6-submit-errors-documented');
});

test('[G6-interop-docs] guide: a raw binding is usable while its access is held, pins its owner, and is gone after release', async ({ page }) => {
  await runBlock(page, 7, 'G6-interop-docs');
});

// ---------------------------------------------------------------------------------------------------
// checked tables

test('[G6-submit-state-tables] the submission state tables list exactly the outcome kinds the shipped types define', () => {
  const types = declarations();
  const outcomes = checkedTable('outcomes').keys.map((k) => k[0]!);
  expect(sorted(outcomes)).toEqual(sorted([...types.literals('Outcome', 'kind'), 'rejected', 'admitted']));
  const scoped = checkedTable('scoped-outcomes').keys.map((k) => k[0]!);
  expect(sorted(scoped)).toEqual(sorted(types.literals('ScopedOutcome', 'kind')));
  const chained = checkedTable('chain-states').keys.map((k) => k[0]!);
  expect(sorted(chained)).toEqual(sorted([...types.literals('ChainOutcome', 'kind'), 'rejected', 'admitted', 'parked']));
});

test('[DP-state-docs] the descriptor and session state tables list exactly the shipped DescriptorState and Session states', async () => {
  const types = declarations();
  expect(sorted(checkedTable('descriptor-states').keys.map((k) => k[0]!))).toEqual(sorted(types.literals('DescriptorState')));
  expect(sorted(checkedTable('session-states').keys.map((k) => k[0]!))).toEqual(sorted(types.literals('Session', 'state')));
  // The stream conditions name real codes and real reasons.
  const { ERROR_CODES } = (await shippedModule()) as { ERROR_CODES: readonly string[] };
  const { rows } = checkedTable('stream-conditions');
  const literals = sourceLiterals();
  const named = rows.flatMap((r) => [...ticked(r[1]!), ...ticked(r[2]!)]).filter((w) => CODE.test(w) || REASON.test(w));
  expect(named.filter((w) => CODE.test(w)).length).toBeGreaterThan(0);
  const unknown = named.filter((w) => (CODE.test(w) ? !ERROR_CODES.includes(w) : !literals.has(w)));
  expect(unknown, 'codes and reasons the source does not have').toEqual([]);
});

test('[G6-submit-errors-documented] the error table lists every code of ERROR_CODES once, with reasons the source really uses', async () => {
  const { ERROR_CODES } = (await shippedModule()) as { ERROR_CODES: readonly string[] };
  const { keys, rows } = checkedTable('error-codes');
  const codes = keys.map((k) => k[0]!);
  expect(codes.length).toBe(new Set(codes).size);
  expect(sorted(codes)).toEqual(sorted(ERROR_CODES));
  const literals = sourceLiterals();
  const reasons = rows.flatMap((row) => ticked(row[2]!).map((reason) => `${row[0]} ${reason}`));
  expect(reasons.length).toBeGreaterThan(codes.length);
  expect(reasons.filter((r) => !literals.has(r.split(' ')[1]!)), 'documented reasons the source does not have').toEqual([]);
});

test('[G6-submit-errors-documented] every public member of the submission API has a row, and each row lists the codes its source throws', async () => {
  const shipped = (await shippedModule()) as Record<string, { prototype: object } & object>;
  const classes = ['Runtime', 'ExecutionHandle', 'ChainHandle', 'Bundle', 'CompiledGraph', 'WorkerPool', 'PoolHandle'];
  const publicMembers = classes.flatMap((cls) => {
    const own = Object.getOwnPropertyNames(shipped[cls]!.prototype).filter((n) => n !== 'constructor');
    const statics = Object.getOwnPropertyNames(shipped[cls]!).filter((n) => !['length', 'name', 'prototype'].includes(n));
    return [...own, ...statics].map((n) => `${cls}.${n}`);
  });
  const { rows } = checkedTable('submit-api');
  const documented = new Map<string, string[]>();
  for (const row of rows) {
    const codes = ticked(row[1]!).filter((w) => /^E[A-Z]+$/.test(w));
    for (const name of ticked(row[0]!)) documented.set(name.replace(/\(.*\)$/, ''), codes);
  }
  const documentedMembers = [...documented.keys()].filter((n) => n.includes('.'));
  expect(sorted(documentedMembers)).toEqual(sorted(publicMembers));
  const { ERROR_CODES } = shipped as unknown as { ERROR_CODES: readonly string[] };
  const thrown = thrownCodes();
  const unreal: string[] = [];
  const undocumented: string[] = [];
  for (const [name, codes] of documented) {
    for (const code of codes) if (!ERROR_CODES.includes(code)) unreal.push(`${name} ${code}`);
    // Members are keyed Class.member, top-level functions (createRuntime) by their name.
    for (const code of thrown.get(name) ?? []) if (!codes.includes(code)) undocumented.push(`${name} ${code}`);
  }
  expect(unreal, 'documented codes that do not exist').toEqual([]);
  expect(undocumented, 'codes a member creates in its source but its row does not list').toEqual([]);
});

test('[G6-interop-docs] the guide states the binding rules and the isolation headers tenon itself serves', () => {
  const interop = guide.slice(guide.indexOf('## 8. Interop'));
  for (const duty of ['**How long it lives.**', '**Sync duties.**', '**After retirement.**', '### Threads and workers', '### Cross-origin isolation']) {
    expect(interop, `the interop section covers ${duty}`).toContain(duty);
  }
  for (const [header, value] of Object.entries(crossOriginIsolationHeaders as Record<string, string>)) {
    expect(interop).toContain(`\`${header}: ${value}\``);
  }
});
