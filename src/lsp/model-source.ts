import path from "node:path";
import type { TextDocuments } from "vscode-languageserver/node";
import type { TextDocument } from "vscode-languageserver-textdocument";
import { CONFIG_FILE } from "../repo/layout.js";
import type { ModelSource } from "./features.js";
import type { ModelTensorReader } from "./model-tensors.js";
import { toUri } from "./publish.js";
import { type Workspace, locateConfig } from "./workspace.js";

/** A config's own model and the models its text names (ensemble steps): what a request about it may read. */
export function modelsNamedIn(file: string, text: string): string[] {
  const own = locateConfig(file)?.model;
  const named = [...text.matchAll(/\bmodel_name\s*:\s*"([^"\n]*)"/g)].map((m) => m[1]!);
  return own ? [own, ...named] : named;
}

// A config in no repository: the schema's completion and hover, no other model.
const ALONE: ModelSource = {
  self: "",
  names: () => [],
  config: () => undefined,
  layout: () => undefined,
  runs: () => undefined,
  tensors: async () => undefined,
};

/**
 * The repository around a config as completion, hover and definitions see it: the editor's
 * unsaved text of the other configs where they are open, the workspace's reading otherwise.
 */
export function modelSourceFor(
  file: string,
  workspace: Workspace,
  documents: TextDocuments<TextDocument>,
  tensors: ModelTensorReader,
): { src: ModelSource; repo: string | undefined } {
  const at = locateConfig(file);
  if (!at) return { src: ALONE, repo: undefined };
  const { repo } = at;
  const src: ModelSource = {
    self: at.model,
    names: () => workspace.modelNames(repo),
    config: (name) => {
      const f = path.join(repo, name, CONFIG_FILE);
      const text = documents.get(toUri(f))?.getText() ?? workspace.model(repo, name)?.layout.configText;
      return text === undefined ? undefined : { file: f, text };
    },
    layout: (name) => workspace.model(repo, name)?.layout,
    runs: (name) => {
      const c = workspace.model(repo, name)?.parsed?.config;
      return c ? c.backend || c.platform || undefined : undefined;
    },
    tensors: async (name) => {
      const m = workspace.model(repo, name);
      return m ? tensors.read(m.layout, m.parsed?.config) : undefined;
    },
  };
  return { src, repo };
}
