#!/usr/bin/env node
// The house's measures (issue 40): source files over 400 lines, functions over 150, classes over 300, and import
// cycles between files and between folders of src/. Run with `npm run house`; `--json` prints the same as JSON.
// Exits 0 always: it measures, and the dependency rules (npm run depcheck) are what CI enforces.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SRC = join(ROOT, 'src');
const LIMITS = { fileLines: 400, functionLines: 150, classLines: 300 };

function sourceFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

const rel = (path) => relative(ROOT, path);

/** Lines as `wc -l` counts them. */
function lineCount(text) {
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

/** A readable name for a function-like or class node: its own, or the variable or property it is assigned to. */
function nameOf(node) {
  if (node.name && ts.isIdentifier(node.name)) return node.name.text;
  if (node.name && ts.isPrivateIdentifier(node.name)) return node.name.text;
  if (node.name && ts.isStringLiteral(node.name)) return node.name.text;
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  if (parent && ts.isPropertyAssignment(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  if (parent && ts.isPropertyDeclaration(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  return '(anonymous)';
}

function spanLines(sf, node) {
  const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
  const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
  return end - start + 1;
}

/** Relative imports of a file, resolved to files of src/: static (type-only too), re-exports, and import(). */
function importsOf(sf, file) {
  const specifiers = [];
  const visit = (node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
      specifiers.push(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      specifiers.push(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  const targets = new Set();
  for (const spec of specifiers) {
    if (!spec.startsWith('.')) continue;
    const base = resolve(dirname(file), spec).replace(/\.js$/, '');
    for (const candidate of [`${base}.ts`, join(base, 'index.ts')]) {
      try {
        if (statSync(candidate).isFile()) {
          targets.add(candidate);
          break;
        }
      } catch {}
    }
  }
  return [...targets];
}

/** Strongly connected components with more than one member (Tarjan), each sorted. */
function cycles(graph) {
  let index = 0;
  const stack = [];
  const on = new Set();
  const idx = new Map();
  const low = new Map();
  const found = [];
  const strong = (v) => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) {
        low.set(v, Math.min(low.get(v), idx.get(w)));
      }
    }
    if (low.get(v) === idx.get(v)) {
      const component = [];
      let w;
      do {
        w = stack.pop();
        on.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? new Set()).has(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) strong(v);
  return found;
}

/** The folder a file lives in, one level under src/ (files directly in src/ are their own room). */
function folderOf(file) {
  const parts = relative(SRC, file).split('/');
  return parts.length === 1 ? parts[0].replace(/\.ts$/, '') : parts[0];
}

const files = sourceFiles(SRC).sort();
const bigFiles = [];
const longFunctions = [];
const bigClasses = [];
const fileGraph = new Map();
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  const lines = lineCount(text);
  if (lines > LIMITS.fileLines) bigFiles.push({ file: rel(file), lines });
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const visit = (node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const n = spanLines(sf, node);
      if (n > LIMITS.functionLines) {
        const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
        longFunctions.push({ file: rel(file), line, name: nameOf(node), lines: n });
      }
    }
    if (ts.isClassDeclaration(node) || ts.isClassExpression(node)) {
      const n = spanLines(sf, node);
      if (n > LIMITS.classLines) {
        const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
        bigClasses.push({ file: rel(file), line, name: nameOf(node), lines: n });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  fileGraph.set(file, new Set(importsOf(sf, file)));
}

const folderGraph = new Map();
for (const [from, targets] of fileGraph) {
  const a = folderOf(from);
  if (!folderGraph.has(a)) folderGraph.set(a, new Set());
  for (const to of targets) {
    const b = folderOf(to);
    if (a !== b) folderGraph.get(a).add(b);
  }
}
const fileCycles = cycles(fileGraph).map((c) => c.map(rel));
const folderCycles = cycles(folderGraph);

const report = {
  files: files.length,
  lines: files.reduce((sum, f) => sum + lineCount(readFileSync(f, 'utf8')), 0),
  limits: LIMITS,
  bigFiles: bigFiles.sort((a, b) => b.lines - a.lines),
  longFunctions: longFunctions.sort((a, b) => b.lines - a.lines),
  bigClasses: bigClasses.sort((a, b) => b.lines - a.lines),
  fileCycles,
  folderCycles,
};

if (process.argv.includes('--json')) {
  console.log(JSON.stringify(report, null, 2));
} else {
  const out = [`src/: ${report.files} files, ${report.lines} lines`];
  out.push(`\nFiles over ${LIMITS.fileLines} lines: ${bigFiles.length}`);
  for (const f of report.bigFiles) out.push(`  ${String(f.lines).padStart(5)}  ${f.file}`);
  out.push(`\nFunctions over ${LIMITS.functionLines} lines: ${longFunctions.length}`);
  for (const f of report.longFunctions)
    out.push(`  ${String(f.lines).padStart(5)}  ${f.name} (${f.file}:${f.line})`);
  out.push(`\nClasses over ${LIMITS.classLines} lines: ${bigClasses.length}`);
  for (const c of report.bigClasses)
    out.push(`  ${String(c.lines).padStart(5)}  ${c.name} (${c.file}:${c.line})`);
  out.push(`\nImport cycles between files: ${fileCycles.length}`);
  for (const c of fileCycles) out.push(`  ${c.join(' <-> ')}`);
  out.push(`\nImport cycles between folders of src/: ${folderCycles.length}`);
  for (const c of folderCycles) out.push(`  ${c.join(' <-> ')}`);
  console.log(out.join('\n'));
}
