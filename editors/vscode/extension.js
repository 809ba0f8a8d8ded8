// The VS Code side of `triton-dev lsp`: starts the server over stdio for config.pbtxt files and
// leaves everything else (diagnostics, completion, hover, definitions, fixes, formatting) to it.
"use strict";
const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

/**
 * A setting from the user's own settings only. What the extension starts is never taken from a
 * workspace (a cloned repository's .vscode/settings.json): package.json makes these settings
 * machine-scoped, and an older VS Code that still merged a workspace value in is ignored here too.
 */
function userSetting(settings, key, fallback, valid) {
  const seen = settings.inspect(key);
  const value = seen ? seen.globalValue : undefined;
  return value !== undefined && valid(value) ? value : fallback;
}

function activate(context) {
  const settings = vscode.workspace.getConfiguration("triton-dev");
  const command = userSetting(settings, "path", "triton-dev", (v) => typeof v === "string" && v.length > 0);
  const args = [
    ...userSetting(settings, "args", [], (v) => Array.isArray(v) && v.every((a) => typeof a === "string")),
    "lsp",
  ];
  const serverOptions = { command, args, transport: TransportKind.stdio };
  const clientOptions = {
    documentSelector: [{ scheme: "file", language: "pbtxt", pattern: "**/config.pbtxt" }],
    synchronize: { fileEvents: vscode.workspace.createFileSystemWatcher("**/config.pbtxt") },
  };
  client = new LanguageClient("triton-dev", "triton-dev", serverOptions, clientOptions);
  context.subscriptions.push({ dispose: () => client && client.stop() });
  return client.start().catch((err) => {
    vscode.window.showErrorMessage(
      `triton-dev lsp did not start (${err.message}). Install triton-dev, or set "triton-dev.path" to it.`,
    );
  });
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
