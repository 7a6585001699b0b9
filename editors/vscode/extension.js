// The VS Code extension: the grammar colours .recourse files, and vscode-languageclient runs
// `recourse lsp` (server.js) for diagnostics, hover, completion, formatting and definitions.
'use strict';

const vscode = require('vscode');
const { LanguageClient } = require('vscode-languageclient/node');
const { serverOptions, clientOptions } = require('./server');

let client;

/** Starts the language server with the settings recourse.server.path and .args. */
function activate() {
  const config = vscode.workspace.getConfiguration('recourse.server');
  const settings = { path: config.get('path'), args: config.get('args') };
  client = new LanguageClient('recourse', 'recourse', serverOptions(settings), clientOptions());
  return client.start();
}

/** Stops the server (shutdown, then exit). */
function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
