#!/usr/bin/env node
// Guarantee-ledger checker, run by `npm run contracts` (DESIGN.md, "contracts/ — the guarantee ledger").
//
// Contract: reads every contracts/registry/*.json and every test file under contracts/, src/ and e2e/
// (`*.test.ts`, plus `*.spec.ts` under e2e/), never writes anything, and exits 0 when the ledger holds,
// 1 when it does not, 2 on a bad command line. Plain Node 20 ESM with node: builtins only, so it runs
// before `npm ci` and inside the before-stop hook.
//
// Registry file shape (one per layer):
//   { "layer": "dataplane", "source": "seed 004_….txt", "guarantees": [
//     { "id": "IO8", "statement": "one line", "state": "active" | "deferred",
//       "reason": "why deferred (required when deferred)", "evidence": ["contracts/dataplane/io.test.ts"] } ] }
//
// Test titles name guarantees with leading bracket groups: '[IO8] …', '[IO8][B7] …', '[IO8, B7] …'.
// Titles are found statically (no test file is imported or run): the first argument of it/test/describe
// and their chains (.skip, .only, .todo, .fails, .concurrent, .each(…)(…), .for(…)(…), .skipIf(…)(…), …)
// when that argument is a string or template literal.
//
// Rules: a registry that is not the shape above fails; a title naming an unknown id fails; a runnable
// title naming a deferred id fails; an active id needs at least one runnable title naming it inside one
// of its evidence files (it.todo / it.skip / titles inside describe.skip do not count and are listed as
// pending). An active id named in a file outside its evidence list is a warning. A todo/skip title naming
// a deferred id is a warning only: planning unwritten cases with it.todo is the house style.
//
// Mutant lists (contracts/mutants/*.json, run by scripts/mutants.mjs) are checked statically too, so a
// list gone stale fails here in seconds rather than in the mutant step at the end of `npm test`: each
// mutant has the shape below, its id is unique across the lists, it names active registry ids only, its
// `find` text occurs exactly once in its file (and differs from `replace`), and its test files exist.
//   { "note"?: "…", "mutants": [ { "id", "guarantees": [ids], "file", "find", "replace", "tests": [files],
//     "lane"?: "node" | "browser", "focus"?: "text" } ] }
//
// Usage: node scripts/contracts.mjs [--json] [--root DIR]
//   --json      print one JSON object (counts, layers, problems, warnings, pending) instead of text
//   --root DIR  check the tree at DIR instead of the repository this script lives in

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Shape of a guarantee id: letters/digits, hyphen-separated words, starting with a letter. */
const ID_PATTERN = /^[A-Za-z][A-Za-z0-9]*(-[A-Za-z0-9]+)*$/;
const STATES = new Set(['active', 'deferred']);
const REGISTRY_DIR = 'contracts/registry';
/** Keys a registry file and a guarantee entry may carry; anything else is a shape error. */
const FILE_KEYS = new Set(['layer', 'source', 'guarantees']);
const ENTRY_KEYS = new Set(['id', 'statement', 'state', 'reason', 'evidence']);
/** Folders scanned for `*.test.ts`; e2e/ is also scanned for Playwright's `*.spec.ts`. */
const TEST_ROOTS = ['contracts', 'src', 'e2e'];
const SPEC_ROOTS = new Set(['e2e']);
const SKIPPED_DIRS = new Set(['node_modules']);
/** Functions whose first string argument is a test or suite title. */
const TITLE_ROOTS = new Set(['it', 'test', 'describe']);
/** Chain members that take their own arguments and return the function that takes the title. */
const ARGUMENT_MODIFIERS = new Set(['each', 'for', 'skipIf', 'runIf']);
/** Chain members that mark a title as not run (not evidence). */
const PENDING_MODIFIERS = new Set(['todo', 'skip']);
/** Keywords after which a `/` starts a regular expression rather than a division. */
const REGEX_KEYWORDS = new Set([
  'return', 'typeof', 'instanceof', 'in', 'of', 'new', 'delete', 'void', 'throw', 'case', 'do', 'else',
  'yield', 'await',
]);

const MUTANT_DIR = 'contracts/mutants';
const MUTANT_LIST_KEYS = new Set(['note', 'mutants']);
const MUTANT_KEYS = new Set(['id', 'guarantees', 'file', 'find', 'replace', 'tests', 'lane', 'focus']);
const MUTANT_LANES = new Set(['node', 'browser']);

const USAGE = 'usage: node scripts/contracts.mjs [--json] [--root DIR]';

// ---------------------------------------------------------------------------------------------------
// Command line

function parseArgs(argv) {
  const options = { json: false, root: path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..') };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--json') options.json = true;
    else if (arg === '--root') {
      if (i + 1 >= argv.length) throw new UsageError('--root needs a directory');
      options.root = path.resolve(argv[++i]);
    } else if (arg.startsWith('--root=')) options.root = path.resolve(arg.slice('--root='.length));
    else if (arg === '--help' || arg === '-h') options.help = true;
    else throw new UsageError(`unknown argument ${JSON.stringify(arg)}`);
  }
  return options;
}

class UsageError extends Error {}

// ---------------------------------------------------------------------------------------------------
// Registry

/**
 * Loads and validates every registry file. Returns the guarantees by id (first definition wins) and the
 * per-layer counts; every shape problem is appended to `problems`.
 */
function loadRegistry(root, problems) {
  const dir = path.join(root, REGISTRY_DIR);
  const guarantees = new Map();
  const layers = new Map();
  let names = [];
  try {
    names = fs.readdirSync(dir).filter((name) => name.endsWith('.json')).sort();
  } catch {
    problems.push({ file: REGISTRY_DIR, message: 'registry folder is missing' });
    return { guarantees, layers };
  }
  if (names.length === 0) problems.push({ file: REGISTRY_DIR, message: 'registry folder holds no *.json file' });

  for (const name of names) {
    const file = `${REGISTRY_DIR}/${name}`;
    const bad = (message, id) => problems.push(id === undefined ? { file, message } : { file, id, message });
    let doc;
    try {
      doc = JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8'));
    } catch (error) {
      bad(`not valid JSON: ${error.message}`);
      continue;
    }
    if (!isPlainObject(doc)) {
      bad('top level must be an object { layer, source, guarantees }');
      continue;
    }
    for (const key of Object.keys(doc)) if (!FILE_KEYS.has(key)) bad(`unknown top-level key ${JSON.stringify(key)}`);
    if (!isNonEmptyString(doc.layer)) bad('"layer" must be a non-empty string');
    if (!isNonEmptyString(doc.source)) bad('"source" must be a non-empty string');
    if (!Array.isArray(doc.guarantees)) {
      bad('"guarantees" must be an array');
      continue;
    }
    const layer = isNonEmptyString(doc.layer) ? doc.layer : `(${name})`;
    if (!layers.has(layer)) layers.set(layer, { active: 0, deferred: 0, files: [] });
    layers.get(layer).files.push(file);

    doc.guarantees.forEach((entry, index) => {
      const where = `guarantees[${index}]`;
      if (!isPlainObject(entry)) {
        bad(`${where} must be an object`);
        return;
      }
      const id = typeof entry.id === 'string' ? entry.id : undefined;
      const label = id === undefined ? where : `${where} (${id})`;
      let valid = true;
      const fail = (message) => {
        valid = false;
        bad(`${label}: ${message}`, id);
      };
      for (const key of Object.keys(entry)) if (!ENTRY_KEYS.has(key)) fail(`unknown key ${JSON.stringify(key)}`);
      if (id === undefined) fail('"id" must be a string');
      else if (!ID_PATTERN.test(id)) fail(`id ${JSON.stringify(id)} does not match ${ID_PATTERN}`);
      if (typeof entry.statement !== 'string' || entry.statement.trim() === '') fail('"statement" must be a non-empty string');
      else if (/[\r\n\u2028\u2029]/.test(entry.statement)) fail('"statement" must be one line');
      if (!STATES.has(entry.state)) fail(`"state" must be "active" or "deferred", got ${JSON.stringify(entry.state)}`);
      if (entry.reason !== undefined && typeof entry.reason !== 'string') fail('"reason" must be a string');
      if (entry.state === 'deferred' && !isNonEmptyString(entry.reason)) fail('a deferred guarantee needs a non-empty "reason"');
      const evidence = Array.isArray(entry.evidence) ? entry.evidence : undefined;
      if (evidence === undefined) fail('"evidence" must be an array of file paths');
      else if (!evidence.every((item) => typeof item === 'string')) fail('"evidence" entries must be strings');
      else if (entry.state === 'active') {
        if (evidence.length === 0) fail('an active guarantee needs at least one evidence file');
        for (const item of evidence) {
          const problem = evidencePathProblem(root, item);
          if (problem) fail(`evidence ${JSON.stringify(item)} ${problem}`);
        }
      }
      if (id !== undefined && ID_PATTERN.test(id)) {
        const first = guarantees.get(id);
        if (first) {
          valid = false;
          bad(`duplicate id ${id} (first defined in ${first.file} guarantees[${first.index}])`, id);
        } else if (STATES.has(entry.state)) {
          guarantees.set(id, {
            id,
            layer,
            file,
            index,
            state: entry.state,
            evidence: (evidence ?? []).filter((item) => typeof item === 'string').map(normalizeEvidence),
            valid,
          });
        }
      }
    });
  }
  return { guarantees, layers };
}

/** Returns why an evidence path is unusable, or undefined when it names an existing file inside root. */
function evidencePathProblem(root, item) {
  if (item.trim() === '') return 'is empty';
  if (path.isAbsolute(item) || item.includes('\\')) return 'must be a repository-relative path with "/" separators';
  const normalized = normalizeEvidence(item);
  if (normalized === '..' || normalized.startsWith('../')) return 'points outside the repository';
  let stat;
  try {
    stat = fs.statSync(path.join(root, normalized));
  } catch {
    return 'does not exist';
  }
  if (!stat.isFile()) return 'is not a file';
  if (!isScannedTestFile(normalized)) return 'is not a test file the checker scans (*.test.ts under contracts/, src/, e2e/ or *.spec.ts under e2e/)';
  return undefined;
}

function normalizeEvidence(item) {
  return path.posix.normalize(item).replace(/^\.\//, '');
}

// ---------------------------------------------------------------------------------------------------
// Test files and titles

function isScannedTestFile(relative) {
  const top = relative.split('/')[0];
  if (!TEST_ROOTS.includes(top) || relative.split('/').some((part) => SKIPPED_DIRS.has(part))) return false;
  return relative.endsWith('.test.ts') || (SPEC_ROOTS.has(top) && relative.endsWith('.spec.ts'));
}

/** Lists scanned test files as sorted repository-relative posix paths (symlinks are not followed). */
function listTestFiles(root) {
  const found = [];
  const walk = (relative) => {
    let entries;
    try {
      entries = fs.readdirSync(path.join(root, relative), { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const child = `${relative}/${entry.name}`;
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRS.has(entry.name)) walk(child);
      } else if (entry.isFile() && isScannedTestFile(child)) found.push(child);
    }
  };
  for (const top of TEST_ROOTS) walk(top);
  return found.sort();
}

/**
 * A small JavaScript/TypeScript tokenizer: enough to skip comments, strings, template literals (with
 * nested `${…}`) and regular expressions, so that parentheses and call chains can be matched reliably.
 * Tokens: { type: 'ident' | 'string' | 'template' | 'regex' | 'number' | 'punct', value, start }.
 * For strings `value` is the decoded text; for templates it is the raw text between the backticks.
 */
function tokenize(src) {
  const tokens = [];
  const n = src.length;
  let i = 0;
  while (i < n) {
    const c = src[i];
    if (/\s/.test(c)) {
      i++;
    } else if (c === '/' && src[i + 1] === '/') {
      const end = src.indexOf('\n', i);
      i = end < 0 ? n : end + 1;
    } else if (c === '/' && src[i + 1] === '*') {
      const end = src.indexOf('*/', i + 2);
      i = end < 0 ? n : end + 2;
    } else if (c === '"' || c === "'") {
      const end = skipQuoted(src, i);
      tokens.push({ type: 'string', value: unescape(src.slice(i + 1, end - 1)), start: i });
      i = end;
    } else if (c === '`') {
      const end = skipTemplate(src, i);
      tokens.push({ type: 'template', value: src.slice(i + 1, end - 1), start: i });
      i = end;
    } else if (/[A-Za-z_$]/.test(c)) {
      let end = i + 1;
      while (end < n && /[\w$]/.test(src[end])) end++;
      tokens.push({ type: 'ident', value: src.slice(i, end), start: i });
      i = end;
    } else if (/[0-9]/.test(c)) {
      let end = i + 1;
      while (end < n && /[\w.]/.test(src[end])) end++;
      tokens.push({ type: 'number', value: src.slice(i, end), start: i });
      i = end;
    } else if (c === '/' && regexMayStart(tokens[tokens.length - 1])) {
      const end = skipRegex(src, i);
      tokens.push({ type: 'regex', value: src.slice(i, end), start: i });
      i = end;
    } else {
      tokens.push({ type: 'punct', value: c, start: i });
      i++;
    }
  }
  return tokens;
}

function regexMayStart(previous) {
  if (!previous) return true;
  if (previous.type === 'punct') return previous.value !== ')' && previous.value !== ']';
  if (previous.type === 'ident') return REGEX_KEYWORDS.has(previous.value);
  return false;
}

/** Index just past the closing quote of the string starting at `start` (or the end of the line). */
function skipQuoted(src, start) {
  const quote = src[start];
  let i = start + 1;
  while (i < src.length) {
    const c = src[i];
    if (c === '\\') i += 2;
    else if (c === quote) return i + 1;
    else if (c === '\n') return i;
    else i++;
  }
  return src.length;
}

/** Index just past the closing backtick of the template starting at `start`. */
function skipTemplate(src, start) {
  let i = start + 1;
  while (i < src.length) {
    const c = src[i];
    if (c === '\\') i += 2;
    else if (c === '`') return i + 1;
    else if (c === '$' && src[i + 1] === '{') i = skipExpression(src, i + 2);
    else i++;
  }
  return src.length;
}

/** Index just past the `}` closing a `${` expression whose body starts at `start`. */
function skipExpression(src, start) {
  let depth = 1;
  let i = start;
  while (i < src.length) {
    const c = src[i];
    if (c === '"' || c === "'") i = skipQuoted(src, i);
    else if (c === '`') i = skipTemplate(src, i);
    else if (c === '/' && src[i + 1] === '/') {
      const end = src.indexOf('\n', i);
      i = end < 0 ? src.length : end + 1;
    } else if (c === '/' && src[i + 1] === '*') {
      const end = src.indexOf('*/', i + 2);
      i = end < 0 ? src.length : end + 2;
    } else if (c === '{') {
      depth++;
      i++;
    } else if (c === '}') {
      depth--;
      i++;
      if (depth === 0) return i;
    } else i++;
  }
  return src.length;
}

/** Index just past a regular expression literal (and its flags) starting at `start`. */
function skipRegex(src, start) {
  let i = start + 1;
  let inClass = false;
  while (i < src.length) {
    const c = src[i];
    if (c === '\\') i += 2;
    else if (c === '\n') return i;
    else if (inClass) {
      if (c === ']') inClass = false;
      i++;
    } else if (c === '[') {
      inClass = true;
      i++;
    } else if (c === '/') {
      i++;
      while (i < src.length && /[A-Za-z]/.test(src[i])) i++;
      return i;
    } else i++;
  }
  return src.length;
}

function unescape(text) {
  return text.replace(/\\(u\{[0-9a-fA-F]+\}|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|[\s\S])/g, (_, e) => {
    if (e[0] === 'u' && e.length > 1) return String.fromCodePoint(parseInt(e.replace(/[u{}]/g, ''), 16));
    if (e[0] === 'x' && e.length === 3) return String.fromCharCode(parseInt(e.slice(1), 16));
    return { n: '\n', t: '\t', r: '\r', b: '\b', f: '\f', v: '\v', 0: '\0', '\n': '' }[e] ?? e;
  });
}

/** Index of the `)` matching the `(` token at `open`, or the last token index when unbalanced. */
function matchParen(tokens, open) {
  let depth = 0;
  for (let k = open; k < tokens.length; k++) {
    const t = tokens[k];
    if (t.type !== 'punct') continue;
    if (t.value === '(' || t.value === '[' || t.value === '{') depth++;
    else if (t.value === ')' || t.value === ']' || t.value === '}') {
      depth--;
      if (depth === 0) return k;
    }
  }
  return tokens.length - 1;
}

/**
 * Finds every test/suite title in a source text.
 * Returns [{ title, line, call, kind: 'run' | 'todo' | 'skip' }] in source order; titles inside a
 * describe.skip / describe.todo body count as 'skip'.
 */
function extractTitles(src) {
  const tokens = tokenize(src);
  const lineStarts = [0];
  for (let i = 0; i < src.length; i++) if (src[i] === '\n') lineStarts.push(i + 1);
  const lineOf = (offset) => {
    let lo = 0;
    let hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (lineStarts[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };

  const titles = [];
  const pendingRanges = [];
  for (let k = 0; k < tokens.length; k++) {
    const root = tokens[k];
    if (root.type !== 'ident' || !TITLE_ROOTS.has(root.value)) continue;
    const before = tokens[k - 1];
    if (before && ((before.type === 'punct' && before.value === '.') || (before.type === 'ident' && before.value === 'function'))) continue;
    const modifiers = [];
    let j = k + 1;
    let open = -1;
    for (;;) {
      const t = tokens[j];
      if (!t) break;
      if (t.type === 'punct' && t.value === '.' && tokens[j + 1]?.type === 'ident') {
        const modifier = tokens[j + 1].value;
        modifiers.push(modifier);
        j += 2;
        if (ARGUMENT_MODIFIERS.has(modifier)) {
          const next = tokens[j];
          if (next?.type === 'punct' && next.value === '(') j = matchParen(tokens, j) + 1;
          else if (next?.type === 'template') j += 1; // tagged table: it.each`…`
          else break;
        }
        continue;
      }
      if (t.type === 'punct' && t.value === '(') open = j;
      break;
    }
    if (open < 0) continue;
    const arg = tokens[open + 1];
    if (!arg || (arg.type !== 'string' && arg.type !== 'template')) continue;
    const pending = modifiers.find((m) => PENDING_MODIFIERS.has(m));
    const call = [root.value, ...modifiers].join('.');
    titles.push({ title: arg.value, line: lineOf(arg.start), call, kind: pending ?? 'run', token: open });
    if (pending && root.value === 'describe') pendingRanges.push([open, matchParen(tokens, open)]);
  }
  for (const title of titles) {
    if (title.kind === 'run' && pendingRanges.some(([from, to]) => title.token > from && title.token < to)) title.kind = 'skip';
    delete title.token;
  }
  return titles;
}

/**
 * Reads the leading bracket groups of a title: '[A][B, C] text' -> ids A, B, C.
 * Returns undefined when the title does not start with '['. Groups holding `${…}` are dynamic and
 * cannot be checked; parts that are not id-shaped are reported as malformed.
 */
function parseIdPrefix(title) {
  const text = title.trimStart();
  if (!text.startsWith('[')) return undefined;
  const result = { ids: [], malformed: [], dynamic: [] };
  let i = 0;
  while (text[i] === '[') {
    const close = text.indexOf(']', i);
    if (close < 0) {
      result.malformed.push(text.slice(i));
      break;
    }
    const inner = text.slice(i + 1, close);
    if (inner.includes('${')) result.dynamic.push(`[${inner}]`);
    else {
      for (const part of inner.split(',')) {
        const id = part.trim();
        if (ID_PATTERN.test(id)) {
          if (!result.ids.includes(id)) result.ids.push(id);
        } else result.malformed.push(id === '' ? '(empty)' : id);
      }
    }
    i = close + 1;
    let next = i;
    while (text[next] === ' ' || text[next] === '\t') next++;
    if (text[next] === '[') i = next;
  }
  return result;
}

// ---------------------------------------------------------------------------------------------------
// The check

function check(root) {
  const problems = [];
  const warnings = [];
  const { guarantees, layers } = loadRegistry(root, problems);
  const testFiles = listTestFiles(root);

  /** id -> { evidence: [where], pending: [where], outside: [where] } for active ids */
  const seen = new Map();
  const pending = [];
  let titlesWithIds = 0;
  let evidenceTitles = 0;

  for (const file of testFiles) {
    let src;
    try {
      src = fs.readFileSync(path.join(root, file), 'utf8');
    } catch (error) {
      problems.push({ file, message: `cannot read test file: ${error.message}` });
      continue;
    }
    for (const title of extractTitles(src)) {
      const prefix = parseIdPrefix(title.title);
      if (!prefix) continue;
      const where = `${file}:${title.line}`;
      for (const text of prefix.malformed) {
        problems.push({ file, line: title.line, message: `${where}: title starts with a bracket group but ${JSON.stringify(text)} is not a guarantee id` });
      }
      for (const text of prefix.dynamic) {
        warnings.push({ file, line: title.line, message: `${where}: ${text} is built at run time and cannot be checked` });
      }
      if (prefix.ids.length === 0) continue;
      titlesWithIds++;
      if (title.kind !== 'run') pending.push({ file, line: title.line, call: title.call, kind: title.kind, ids: prefix.ids });
      let isEvidence = false;
      for (const id of prefix.ids) {
        const g = guarantees.get(id);
        if (!g) {
          problems.push({ file, line: title.line, id, message: `${where}: names unknown id ${id}` });
          continue;
        }
        if (g.state === 'deferred') {
          if (title.kind === 'run') problems.push({ file, line: title.line, id, message: `${where}: names deferred id ${id} (activate it in ${g.file} or drop the tag)` });
          else warnings.push({ file, line: title.line, id, message: `${where}: ${title.call} names deferred id ${id}` });
          continue;
        }
        const record = seen.get(id) ?? { evidence: [], pending: [], outside: [] };
        seen.set(id, record);
        if (!g.evidence.includes(file)) {
          if (title.kind === 'run') record.outside.push(where);
        } else if (title.kind === 'run') {
          record.evidence.push(where);
          isEvidence = true;
        } else record.pending.push(`${where} (${title.call})`);
      }
      if (isEvidence) evidenceTitles++;
    }
  }

  let active = 0;
  let deferred = 0;
  for (const g of guarantees.values()) {
    layers.get(g.layer)[g.state]++;
    if (g.state === 'deferred') {
      deferred++;
      continue;
    }
    active++;
    const record = seen.get(g.id) ?? { evidence: [], pending: [], outside: [] };
    if (g.valid && record.evidence.length === 0) {
      let message = `${g.id}: active, but no runnable test title names it in its evidence files (${g.evidence.join(', ') || 'none'})`;
      if (record.pending.length > 0) message += `; only todo/skip titles: ${record.pending.join(', ')}`;
      problems.push({ file: g.file, id: g.id, message });
    }
    if (record.outside.length > 0) {
      warnings.push({ file: g.file, id: g.id, message: `${g.id}: also named outside its evidence files at ${record.outside.join(', ')}` });
    }
  }

  const mutants = checkMutants(root, guarantees, problems);

  const layerSummary = {};
  for (const [name, counts] of [...layers].sort(([a], [b]) => a.localeCompare(b))) layerSummary[name] = counts;
  return {
    ok: problems.length === 0,
    root,
    counts: { active, deferred, evidenceTitles, titlesWithIds, testFiles: testFiles.length, mutants },
    layers: layerSummary,
    problems,
    warnings,
    pending,
  };
}

/**
 * Checks every mutant list under contracts/mutants (none is fine) against the registry and the tree;
 * returns how many mutants it read.
 */
function checkMutants(root, guarantees, problems) {
  const dir = path.join(root, MUTANT_DIR);
  if (!fs.existsSync(dir)) return 0;
  const lists = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
  const ids = new Map();
  const texts = new Map();
  const read = (relative) => {
    if (!texts.has(relative)) {
      try {
        texts.set(relative, fs.readFileSync(path.join(root, relative), 'utf8'));
      } catch {
        texts.set(relative, undefined);
      }
    }
    return texts.get(relative);
  };
  let count = 0;
  for (const list of lists) {
    const file = `${MUTANT_DIR}/${list}`;
    let data;
    try {
      data = JSON.parse(fs.readFileSync(path.join(dir, list), 'utf8'));
    } catch (error) {
      problems.push({ file, message: `${file}: not JSON (${error.message})` });
      continue;
    }
    if (!isPlainObject(data) || !Array.isArray(data.mutants) || Object.keys(data).some((k) => !MUTANT_LIST_KEYS.has(k))) {
      problems.push({ file, message: `${file}: a mutant list is { "note"?, "mutants": [...] }` });
      continue;
    }
    for (const [i, m] of data.mutants.entries()) {
      count++;
      const name = isPlainObject(m) && isNonEmptyString(m.id) ? m.id : `#${i}`;
      const bad = (message) => problems.push({ file, id: isPlainObject(m) ? m.id : undefined, message: `${file}: mutant ${name}: ${message}` });
      if (!isPlainObject(m)) {
        bad('not an object');
        continue;
      }
      const unknown = Object.keys(m).filter((k) => !MUTANT_KEYS.has(k));
      if (unknown.length > 0) bad(`unknown key(s) ${unknown.join(', ')}`);
      if (!isNonEmptyString(m.id)) bad('needs a non-empty id');
      else if (ids.has(m.id)) bad(`id also used in ${ids.get(m.id)}`);
      else ids.set(m.id, file);
      if (!Array.isArray(m.guarantees) || m.guarantees.length === 0) bad('needs a non-empty guarantees list');
      else {
        for (const id of m.guarantees) {
          const g = guarantees.get(id);
          if (!g) bad(`names unknown id ${id}`);
          else if (g.state !== 'active') bad(`names ${g.state} id ${id} (only an active guarantee can kill it)`);
        }
      }
      if (m.lane !== undefined && !MUTANT_LANES.has(m.lane)) bad(`lane must be node or browser`);
      if (m.focus !== undefined && !isNonEmptyString(m.focus)) bad('focus must be non-empty text');
      if (!Array.isArray(m.tests) || m.tests.length === 0 || m.tests.some((t) => !isNonEmptyString(t))) bad('needs a non-empty tests list');
      else for (const t of m.tests) if (read(t) === undefined) bad(`test file ${t} does not exist`);
      if (!isNonEmptyString(m.file) || !isNonEmptyString(m.find) || typeof m.replace !== 'string') {
        bad('needs file, a non-empty find and a replace string');
        continue;
      }
      if (m.find === m.replace) bad('find and replace are the same text');
      const text = read(m.file);
      if (text === undefined) {
        bad(`file ${m.file} does not exist`);
        continue;
      }
      const at = text.indexOf(m.find);
      if (at < 0) bad(`its find text is not in ${m.file} (stale)`);
      else if (text.indexOf(m.find, at + 1) >= 0) bad(`its find text occurs more than once in ${m.file}`);
    }
  }
  return count;
}

function printText(report) {
  const out = [];
  out.push('contracts: registry');
  for (const [name, c] of Object.entries(report.layers)) {
    out.push(`  ${name.padEnd(12)} ${String(c.active).padStart(4)} active ${String(c.deferred).padStart(4)} deferred   ${c.files.join(', ')}`);
  }
  const c = report.counts;
  out.push(`contracts: ${c.testFiles} test files scanned, ${c.titlesWithIds} titles name ids, ${c.evidenceTitles} are evidence, ${report.pending.length} todo/skip, ${c.mutants} mutants checked`);
  for (const p of report.pending) out.push(`  pending ${p.file}:${p.line} ${p.call} [${p.ids.join(', ')}]`);
  for (const w of report.warnings) out.push(`warning: ${w.message.startsWith(w.file) ? '' : `${w.file}: `}${w.message}`);
  for (const p of report.problems) out.push(`problem: ${p.message.startsWith(p.file) ? '' : `${p.file}: `}${p.message}`);
  out.push(
    report.ok
      ? `contracts: ${c.active} active, ${c.deferred} deferred, ${c.evidenceTitles} evidence titles — OK`
      : `contracts: FAILED (${report.problems.length} problem${report.problems.length === 1 ? '' : 's'})`,
  );
  process.stdout.write(`${out.join('\n')}\n`);
}

function isPlainObject(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isNonEmptyString(value) {
  return typeof value === 'string' && value.trim() !== '';
}

function main() {
  let options;
  try {
    options = parseArgs(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`contracts: ${error.message}\n${USAGE}\n`);
    return 2;
  }
  if (options.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (!fs.existsSync(options.root) || !fs.statSync(options.root).isDirectory()) {
    process.stderr.write(`contracts: root ${options.root} is not a directory\n${USAGE}\n`);
    return 2;
  }
  const report = check(options.root);
  if (options.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  else printText(report);
  return report.ok ? 0 : 1;
}

process.exitCode = main();
