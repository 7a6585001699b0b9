// How the extension starts the language server: `recourse lsp` over stdio, as configured by
// recourse.server.path and recourse.server.args. Kept apart from extension.js, which needs the
// editor's `vscode` module, so editors/test/lsp.js checks it with node alone.
'use strict';

/**
 * The vscode-languageclient ServerOptions (an Executable: command, args; stdio is its default
 * transport) for the settings `path` (default "recourse") and `args` (default none).
 * @param {{path?: string, args?: string[]}} settings
 */
function serverOptions(settings) {
  const command = settings && settings.path ? settings.path : 'recourse';
  const extra = settings && Array.isArray(settings.args) ? settings.args : [];
  return { command, args: ['lsp', ...extra] };
}

/** The LanguageClientOptions: .recourse files on disk and unsaved ones. */
function clientOptions() {
  return {
    documentSelector: [
      { scheme: 'file', language: 'recourse' },
      { scheme: 'untitled', language: 'recourse' },
    ],
  };
}

module.exports = { serverOptions, clientOptions };
