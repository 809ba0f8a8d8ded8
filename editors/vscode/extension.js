// The VS Code side of `triton-dev lsp`: starts the server over stdio for config.pbtxt files and
// leaves everything else (diagnostics, completion, hover, definitions, fixes, formatting) to it.
"use strict";
const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const settings = vscode.workspace.getConfiguration("triton-dev");
  const command = settings.get("path", "triton-dev");
  const args = [...settings.get("args", []), "lsp"];
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
