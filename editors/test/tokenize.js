// Tokenizes every bundled policy with the grammar the VS Code extension (editors/vscode) names in
// its manifest, the way VS Code does (vscode-textmate with the Oniguruma regex engine), and fails
// on text the grammar does not cover: non-whitespace that gets no scope beyond the root
// `source.recourse` and the structural `meta.*` scopes (an unmatched span), or any `invalid.*`
// scope. Inputs: every
// rules/**/*.recourse and every ```recourse fence in docs/*.md (the fences that must compile;
// ```recourse-error fences are broken on purpose). Problems print as file:line:col.
//
// Before the bundled files, the grammar itself is checked on small cases: text it must flag,
// and tokens that must carry a given scope, so a grammar that scopes everything (or nothing)
// fails here too.
//
//   node tokenize.js [REPO_ROOT]      (npm ci first; the root defaults to ../..)
'use strict';
const fs = require('fs');
const path = require('path');
const vsctm = require('vscode-textmate');
const oniguruma = require('vscode-oniguruma');

const root = path.resolve(process.argv[2] || path.join(__dirname, '..', '..'));
const extension = path.join(root, 'editors', 'vscode');

// The grammar and language configuration the extension's manifest names, as VS Code finds them.
function manifest() {
  const pkg = JSON.parse(fs.readFileSync(path.join(extension, 'package.json'), 'utf8'));
  const language = pkg.contributes.languages.find((l) => l.id === 'recourse');
  const grammar = pkg.contributes.grammars.find((g) => g.language === 'recourse');
  if (!language || !language.extensions.includes('.recourse') || !grammar) {
    throw new Error('editors/vscode/package.json: no recourse language for .recourse with a grammar');
  }
  const config = JSON.parse(fs.readFileSync(path.join(extension, language.configuration), 'utf8'));
  if (config.comments.lineComment !== '#') throw new Error('language-configuration.json: line comments are #');
  return { scopeName: grammar.scopeName, grammarPath: path.join(extension, grammar.path) };
}

async function loadGrammar() {
  const { scopeName, grammarPath } = manifest();
  const wasm = fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm'));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (text) => new oniguruma.OnigString(text),
    }),
    loadGrammar: async (name) =>
      name === scopeName ? vsctm.parseRawGrammar(fs.readFileSync(grammarPath, 'utf8'), grammarPath) : null,
  });
  const grammar = await registry.loadGrammar(scopeName);
  if (!grammar) throw new Error(`${grammarPath}: no grammar for ${scopeName}`);
  return grammar;
}

// Every token of `lines`: {line (0-based), start, text, scopes}.
function tokenize(grammar, lines) {
  const tokens = [];
  let stack = vsctm.INITIAL;
  lines.forEach((text, line) => {
    const result = grammar.tokenizeLine(text, stack);
    for (const t of result.tokens) {
      tokens.push({ line, start: t.startIndex, text: text.slice(t.startIndex, t.endIndex), scopes: t.scopes });
    }
    stack = result.ruleStack;
  });
  return tokens;
}

// The problems in `lines`: {line, column (both 1-based), message}.
function problems(grammar, lines) {
  const found = [];
  for (const t of tokenize(grammar, lines)) {
    const first = t.text.search(/\S/);
    if (first < 0) continue;
    const at = { line: t.line + 1, column: t.start + first + 1 };
    const invalid = t.scopes.find((s) => s.startsWith('invalid'));
    if (invalid) {
      found.push({ ...at, message: `${invalid}: '${t.text.trim()}'` });
    } else if (t.scopes.slice(1).every((s) => s.startsWith('meta.'))) {
      found.push({ ...at, message: `no scope for '${t.text.trim()}'` });
    }
  }
  return found;
}

// The bundled policies: [{name, firstLine (1-based line of lines[0] in the file), lines}].
function sources() {
  const out = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.name.endsWith('.recourse')) out.push({ name: p, firstLine: 1, lines: fs.readFileSync(p, 'utf8').split('\n') });
    }
  };
  walk(path.join(root, 'rules'));
  const docs = path.join(root, 'docs');
  for (const name of fs.readdirSync(docs).filter((n) => n.endsWith('.md')).sort()) {
    const lines = fs.readFileSync(path.join(docs, name), 'utf8').split('\n');
    for (let i = 0; i < lines.length; i++) {
      if (lines[i].trim() !== '```recourse') continue;
      const end = lines.findIndex((l, j) => j > i && l.trim().startsWith('```'));
      if (end < 0) throw new Error(`docs/${name}:${i + 1}: fence never closed`);
      out.push({ name: path.join(docs, name), firstLine: i + 2, lines: lines.slice(i + 1, end) });
      i = end;
    }
  }
  return out;
}

// Lines the grammar must flag (invalid or unmatched), each inside a policy.
const mustFlag = [
  'bogus -> stop',                                 // not an item
  'limits { deadline = 30sec }',                   // unknown unit (E025)
  'limits { deadline = 5s2 }',                     // a number running into a digit (E001)
  'default -> retyr',                              // unknown route (E013)
  'default -> stop "bad \\q escape"',              // unknown escape
  'rule r when code == TIMEOUT && retryable -> retry',  // not an operator
  'limits { attempts: 3 }',                        // ':' is not '='
  'test "t" { envelope {"code" TIMEOUT} expect retry }',  // not JSON
];

// [line inside a policy, token, a scope it must carry].
const mustScope = [
  ['limits { deadline = 250ms  min_delay = 2s }', 'ms', 'keyword.other.unit.recourse'],
  ['limits { deadline = 250ms  min_delay = 2s }', 'min_delay', 'variable.other.property.recourse'],
  ['backoff exponential base 200ms factor 1.5 jitter full', 'exponential', 'support.type.backoff.recourse'],
  ['backoff exponential base 200ms factor 1.5 jitter full', 'factor', 'variable.parameter.recourse'],
  ['backoff exponential base 200ms factor 1.5 jitter full', '1.5', 'constant.numeric.recourse'],
  ['backoff constant base 2s rule r -> retry', 'rule', 'storage.type.rule.recourse'],
  ['rule r when code in [TIMEOUT, RATE_LIMITED] -> retry', 'RATE_LIMITED', 'constant.other.code.recourse'],
  ['rule r when code in [TIMEOUT, RATE_LIMITED] -> retry', 'retry', 'keyword.control.route.recourse'],
  ['rule r when tool == "x" and not retryable -> stop', 'not', 'keyword.operator.logical.recourse'],
  ['rule r when field is absent -> stop', 'absent', 'constant.language.presence.recourse'],
  ['rule r when attempt >= -1 -> stop', '>=', 'keyword.operator.comparison.recourse'],
  ['rule r when field in arguments -> repair', 'arguments', 'variable.language.arguments.recourse'],
  ['default -> stop "a \\"quoted\\" reason"  # why', '\\"', 'constant.character.escape.recourse'],
  ['default -> stop "a \\"quoted\\" reason"  # why', '#', 'comment.line.number-sign.recourse'],
  ['map http 409 -> BOOKING_TAKEN', 'BOOKING_TAKEN', 'constant.other.code.recourse'],
  ['map grpc ALREADY_EXISTS -> BOOKING_TAKEN', 'grpc', 'support.constant.protocol.recourse'],
  ['assert never [retry, repair] when tool == "x"', 'never', 'keyword.other.quantifier.recourse'],
  ['waive unsafe_resend "dedup by request id"', 'unsafe_resend', 'support.constant.invariant.recourse'],
  ['codes { CARD_DECLINED, INSUFFICIENT_FUNDS }', 'INSUFFICIENT_FUNDS', 'entity.name.constant.code.recourse'],
  ['hit safest', 'safest', 'constant.language.hit-policy.recourse'],
  ['hit safest', 'extends', 'storage.modifier.extends.recourse'],
  ['test "t" { envelope {"code": "TIMEOUT", "n": [1, null]} expect retry delay 250ms..2s rule r }', '..', 'keyword.operator.range.recourse'],
  ['test "t" { envelope {"code": "TIMEOUT", "n": [1, null]} expect retry delay 250ms..2s rule r }', 'null', 'constant.language.json.recourse'],
  ['test "t" { envelope {} context {"attempt": 2} expect stop exhausted attempts }', 'context', 'keyword.other.input.recourse'],
];

const inPolicy = (line) => ['version 1', 'policy "p" extends "base" {', `  ${line}`, '  default -> stop', '}'];

async function main() {
  const grammar = await loadGrammar();
  const checks = []; // [what, [problem, ...]]
  for (const line of mustFlag) {
    checks.push([line, problems(grammar, inPolicy(line)).length ? [] : [`grammar: not flagged: ${line}`]]);
  }
  for (const [line, text, scope] of mustScope) {
    const lines = inPolicy(line);
    const found = problems(grammar, lines).map((p) => `grammar: ${line}: ${p.message}`);
    const token = tokenize(grammar, lines).find((t) => t.text.trim() === text);
    if (!token || !token.scopes.includes(scope)) {
      found.push(`grammar: ${line}: '${text}' has [${token ? token.scopes.join(' ') : 'no token'}], not ${scope}`);
    }
    checks.push([line, found]);
  }
  const files = sources();
  for (const source of files) {
    const where = (p) => `${path.relative(root, source.name)}:${source.firstLine + p.line - 1}:${p.column}`;
    checks.push([source.name, problems(grammar, source.lines).map((p) => `${where(p)}: ${p.message}`)]);
  }
  const failed = checks.filter(([, found]) => found.length);
  for (const [, found] of failed) found.forEach((f) => console.error(f));
  console.log(`tokenized ${files.length} bundled policies and ${checks.length - files.length} grammar cases`);
  console.log(`${checks.length - failed.length} passed, ${failed.length} failed`);
  process.exitCode = failed.length ? 1 : 0;
}

main().catch((e) => {
  console.error(e.stack || String(e));
  process.exitCode = 1;
});
