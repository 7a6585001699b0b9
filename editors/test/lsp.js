// Drives `recourse lsp` as an editor does, over its stdin and stdout with vscode-jsonrpc (the
// transport vscode-languageclient uses), after checking the VS Code extension's launch
// configuration (editors/vscode: package.json, server.js, extension.js).
//
// The session: initialize; didOpen of a policy with an unknown attribute after a string holding
// a 4-byte and a 2-byte character, whose publishDiagnostics must point at the attribute in UTF-16
// units; didChange with the fix and an empty list; hover on an attribute and on a setting;
// completion of routes and of a block's settings; formatting, equal to `recourse fmt -`;
// go-to-definition of an `extends` base and of a rule; shutdown and exit, with status 0.
//
//   node lsp.js RECOURSE_BINARY [REPO_ROOT]   (npm ci in editors/vscode first; NODE_PATH to it)
'use strict';
const assert = require('assert');
const childProcess = require('child_process');
const fs = require('fs');
const Module = require('module');
const os = require('os');
const path = require('path');

const binary = path.resolve(process.argv[2] || 'build/recourse');
const root = path.resolve(process.argv[3] || path.join(__dirname, '..', '..'));
const extension = path.join(root, 'editors', 'vscode');
let checks = 0;

function check(what, fn) {
  try {
    fn();
    checks += 1;
  } catch (e) {
    e.message = `${what}: ${e.message}`;
    throw e;
  }
}

// The manifest activates the extension on recourse files and names its entry point, and
// activate() starts vscode-languageclient with `recourse lsp` as the settings say. The editor's
// `vscode` module and the client class are stood in for; the client package itself must be
// installed (require.resolve).
async function launchConfiguration() {
  const pkg = JSON.parse(fs.readFileSync(path.join(extension, 'package.json'), 'utf8'));
  check('manifest', () => {
    assert.deepStrictEqual(pkg.activationEvents, ['onLanguage:recourse']);
    assert.ok(fs.existsSync(path.join(extension, pkg.main)), `main ${pkg.main} exists`);
    assert.ok(pkg.dependencies['vscode-languageclient'], 'depends on vscode-languageclient');
    const props = pkg.contributes.configuration.properties;
    assert.strictEqual(props['recourse.server.path'].default, 'recourse');
    assert.deepStrictEqual(props['recourse.server.args'].default, []);
  });
  check('vscode-languageclient installed', () => require.resolve('vscode-languageclient/node'));
  const { serverOptions } = require(path.join(extension, 'server.js'));
  check('default server', () =>
    assert.deepStrictEqual(serverOptions({}), { command: 'recourse', args: ['lsp'] }));
  const started = [];
  const settings = { path: binary, args: ['--max-rules', '500'] };
  const stubs = {
    vscode: { workspace: { getConfiguration: (section) => {
      assert.strictEqual(section, 'recourse.server');
      return { get: (key) => settings[key] };
    } } },
    'vscode-languageclient/node': { LanguageClient: class {
      constructor(id, name, server, client) { started.push({ id, name, server, client }); }
      start() { return Promise.resolve(); }
      stop() { return Promise.resolve(); }
    } },
  };
  const load = Module._load;
  Module._load = function (request, ...rest) {
    return Object.prototype.hasOwnProperty.call(stubs, request) ? stubs[request] : load.call(this, request, ...rest);
  };
  try {
    await require(path.join(extension, pkg.main)).activate();
  } finally {
    Module._load = load;
  }
  check('activate', () => {
    assert.strictEqual(started.length, 1);
    assert.deepStrictEqual(started[0].server, { command: binary, args: ['lsp', '--max-rules', '500'] });
    assert.ok(started[0].client.documentSelector.some((s) => s.scheme === 'file' && s.language === 'recourse'));
  });
  return started[0].server;
}

// The fixed policy, in fmt's layout, then the broken one: `cod` for `code`, after a string with
// U+1F680 (4 bytes, 2 UTF-16 units) and U+00E9 (2 bytes, 1 unit) on the same line.
const fixed = [
  'version 1',
  'policy "lsp.demo" extends "lsp.base" {',
  '  limits { attempts = 3 }',
  '  rule fix       when code == VALIDATION and suggestion != "\u{1F680}\u00E9" -> repair',
  '  rule transient when code == TIMEOUT -> retry',
  '  default -> stop',
  '}',
  '',
].join('\n');
const broken = fixed.replace('code == VALIDATION and suggestion != "\u{1F680}\u00E9"',
  'suggestion != "\u{1F680}\u00E9" and cod == VALIDATION');
const base = 'version 1\npolicy "lsp.base" {\n  tool { idempotent = true  arguments = [q] }\n  default -> stop\n}\n';

async function session(server) {
  const rpc = require('vscode-jsonrpc/node');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'recourse-lsp-'));
  fs.writeFileSync(path.join(dir, 'lsp.base.recourse'), base);
  const file = path.join(dir, 'lsp.demo.recourse');
  const uri = `file://${file}`;
  const child = childProcess.spawn(server.command, server.args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  const connection = rpc.createMessageConnection(
    new rpc.StreamMessageReader(child.stdout), new rpc.StreamMessageWriter(child.stdin));
  const published = [];
  let waiting = null;
  connection.onNotification('textDocument/publishDiagnostics', (params) => {
    published.push(params);
    if (waiting) waiting();
  });
  connection.listen();
  const next = async () => {
    while (!published.length) await new Promise((resolve) => { waiting = resolve; });
    return published.shift();
  };

  const init = await connection.sendRequest('initialize', { processId: process.pid, rootUri: null, capabilities: {} });
  check('initialize', () => {
    const caps = init.capabilities;
    assert.strictEqual(caps.positionEncoding, 'utf-16');
    assert.strictEqual(caps.textDocumentSync.change, 1);
    assert.ok(caps.hoverProvider && caps.definitionProvider && caps.documentFormattingProvider);
    assert.ok(caps.completionProvider);
  });
  connection.sendNotification('initialized', {});

  connection.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'recourse', version: 1, text: broken } });
  const first = await next();
  check('diagnostics of the broken policy', () => {
    assert.strictEqual(first.uri, uri);
    assert.strictEqual(first.version, 1);
    assert.strictEqual(first.diagnostics.length, 1, JSON.stringify(first.diagnostics));
    const [d] = first.diagnostics;
    const line = broken.split('\n')[3];
    assert.strictEqual(d.severity, 1);
    assert.strictEqual(d.source, 'recourse');
    assert.strictEqual(d.code, 'E010');
    // `cod` starts at byte 49 of its line, code point 45, UTF-16 unit 46.
    assert.strictEqual(Buffer.byteLength(line.slice(0, line.indexOf(' cod ') + 1)), 49);
    assert.deepStrictEqual(d.range, { start: { line: 3, character: 46 }, end: { line: 3, character: 49 } });
    assert.match(d.message, /cod/);
    assert.match(d.message, /help: /);
  });

  connection.sendNotification('textDocument/didChange', { textDocument: { uri, version: 2 }, contentChanges: [{ text: fixed }] });
  const second = await next();
  check('diagnostics after the fix', () => {
    assert.strictEqual(second.version, 2);
    assert.deepStrictEqual(second.diagnostics, []);
  });

  const at = (needle, delta = 0) => {
    const lines = fixed.split('\n');
    const line = lines.findIndex((l) => l.includes(needle));
    return { line, character: lines[line].indexOf(needle) + delta };
  };
  const textDocument = { uri };
  const hoverAttr = await connection.sendRequest('textDocument/hover', { textDocument, position: at('suggestion', 2) });
  check('hover on an attribute', () => {
    assert.strictEqual(hoverAttr.contents.kind, 'markdown');
    assert.match(hoverAttr.contents.value, /^\*\*suggestion\*\*: attribute, string/);
    assert.match(hoverAttr.contents.value, /envelope \(the tool's server: untrusted\), JSON key `suggestion`; may be absent/);
    assert.deepStrictEqual(hoverAttr.range, { start: at('suggestion'), end: at('suggestion', 10) });
  });
  const hoverSetting = await connection.sendRequest('textDocument/hover', { textDocument, position: at('attempts') });
  check('hover on a setting', () => {
    assert.match(hoverSetting.contents.value, /^\*\*limits\.attempts\*\*: count, 1 \.\. 10; default `3`\n\n/);
  });

  const routes = await connection.sendRequest('textDocument/completion', { textDocument, position: at('-> retry', 3) });
  check('completion of routes', () => {
    assert.deepStrictEqual(routes.map((i) => i.label).sort(),
      ['authorize', 'degrade', 'escalate', 'repair', 'replace', 'retry', 'stop']);
  });
  const codes = await connection.sendRequest('textDocument/completion', { textDocument, position: at('VALIDATION') });
  check('completion of codes', () => {
    assert.deepStrictEqual(codes.map((i) => i.label), ['TRANSIENT', 'RATE_LIMITED', 'TIMEOUT', 'VALIDATION',
      'PERMISSION', 'NOT_FOUND', 'CONFLICT', 'QUOTA_EXCEEDED', 'CONTEXT_OVERFLOW', 'UNKNOWN', 'PENDING']);
  });
  const attributes = await connection.sendRequest('textDocument/completion', { textDocument, position: at('code == TIMEOUT') });
  check('completion of attributes', () => {
    const labels = attributes.map((i) => i.label);
    for (const a of ['code', 'retryable', 'side_effect', 'attempts_left', 'field in arguments', 'not']) assert.ok(labels.includes(a), a);
    assert.ok(!labels.includes('deadline_slack'), 'the guards\' own attributes are not offered');
    const side = attributes.find((i) => i.label === 'side_effect');
    assert.strictEqual(side.detail, 'enum');
    assert.match(side.documentation.value, /`none, unknown, committed`/);
  });
  const settings = await connection.sendRequest('textDocument/completion', { textDocument, position: at('attempts') });
  check('completion of limits settings', () => {
    const labels = settings.map((i) => i.label);
    for (const s of ['attempts', 'repairs', 'deadline', 'retry_after_max', 'on_exhausted']) assert.ok(labels.includes(s), s);
    assert.ok(!labels.includes('idempotent'), 'a tool setting is not offered in limits');
  });

  const definition = await connection.sendRequest('textDocument/definition', { textDocument, position: at('"lsp.base"', 1) });
  check('definition of the base', () => {
    assert.strictEqual(definition.uri, `file://${path.join(dir, 'lsp.base.recourse')}`);
    assert.deepStrictEqual(definition.range, { start: { line: 1, character: 7 }, end: { line: 1, character: 17 } });
  });

  const messy = fixed.replace('limits { attempts = 3 }', 'limits {attempts=3}');
  connection.sendNotification('textDocument/didChange', { textDocument: { uri, version: 3 }, contentChanges: [{ text: messy }] });
  await next();
  const edits = await connection.sendRequest('textDocument/formatting', { textDocument, options: { tabSize: 2, insertSpaces: true } });
  check('formatting', () => {
    const fmt = childProcess.execFileSync(binary, ['fmt', '-'], { input: messy }).toString();
    assert.strictEqual(fmt, fixed);
    assert.strictEqual(edits.length, 1);
    assert.strictEqual(edits[0].newText, fmt);
    assert.deepStrictEqual(edits[0].range, { start: { line: 0, character: 0 }, end: { line: 7, character: 0 } });
  });

  const shutdown = await connection.sendRequest('shutdown');
  check('shutdown', () => assert.strictEqual(shutdown, null));
  connection.sendNotification('exit');
  const status = await exited;
  check('exit', () => assert.strictEqual(status, 0));
  connection.dispose();
  fs.rmSync(dir, { recursive: true, force: true });
}

async function main() {
  const server = await launchConfiguration();
  await session(server);
  console.log(`${checks} checks passed`);
}

main().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);  // the server, still running, would keep node waiting
});
