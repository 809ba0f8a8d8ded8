import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { log as rootLog } from "../log/logger.js";
import { EnvironmentError, type BuiltEnvironment, type EnvironmentBuilder } from "./builder.js";
import { isPythonConfig, setsExecutionEnv } from "./execution-env.js";
import {
  describeMissingImports,
  findMissingImports,
  modelFileName,
  modelFiles,
  type MissingImport,
} from "./missing-imports.js";
import { REQUIREMENTS_FILE } from "./requirements.js";

/**
 * What staging asks for each model it copies: the folder of the environment the model runs in,
 * when its requirements.txt asks for one. A runtime that can build environments provides it
 * (local); staging writes the result into the staged config.pbtxt.
 */
export interface ModelEnvironments {
  /**
   * `dir` is the staged copy (read, never the user's folder while it may change), `userDir` the
   * user's folder for messages. `onBuild` is told when an environment is built rather than found
   * in the cache (an edit's timeline shows it). Throws EnvironmentError.
   */
  prepare(
    model: string,
    dir: string,
    userDir: string,
    onBuild?: (what: string) => void,
  ): Promise<BuiltEnvironment | undefined>;
  /**
   * The environment of a model the runtime serves through the python backend (reload/backend-adapter.ts):
   * `requirement` (the backend's runtime library, pinned) written as `file`, a requirements file
   * in the staged copy, built like a requirements.txt. Throws EnvironmentError.
   */
  prepareRuntime(
    model: string,
    file: string,
    userFile: string,
    onBuild?: (what: string) => void,
  ): Promise<BuiltEnvironment | undefined>;
}

/** A python model: its config names the backend, or it has none and a version folder holds model.py. */
async function isPythonModel(dir: string): Promise<{ python: boolean; config?: string }> {
  const config = await fsp.readFile(path.join(dir, "config.pbtxt"), "utf8").catch(() => undefined);
  if (config !== undefined) return { python: isPythonConfig(config), config };
  const entries = await fsp.readdir(dir, { withFileTypes: true }).catch(() => []);
  return {
    python: entries.some((e) => /^\d+$/.test(e.name) && fs.existsSync(path.join(dir, e.name, "model.py"))),
  };
}

/**
 * Only the model folder's requirements.txt counts: EXECUTION_ENV_PATH is a setting of the model,
 * shared by all its versions, so one in a version folder would have nothing to apply to.
 */
export function requirementsOf(dir: string): string {
  return path.join(dir, REQUIREMENTS_FILE);
}

const log = rootLog.child("envs");

/**
 * Every module the model's files import at load that `python` (the environment the stub will run)
 * lacks, refused together before Triton loads the model: its load would stop at the first with
 * "No module named ..." and the next load at the second. Read by `ast`, never run (missing-imports.ts).
 */
async function refuseMissingImports(
  model: string,
  dir: string,
  userDir: string,
  python: string,
  config: string | undefined,
): Promise<void> {
  const versions = (await fsp.readdir(dir, { withFileTypes: true }).catch(() => []))
    .filter((e) => e.isDirectory() && /^\d+$/.test(e.name))
    .map((e) => e.name);
  const missing: MissingImport[] = [];
  for (const entry of modelFiles(dir, versions, modelFileName(config))) {
    try {
      missing.push(...(await findMissingImports({ entry, python })).missing);
    } catch (err) {
      // The check is a help, never a gate of its own: the load then says what is missing.
      log.warn("import check did not run", { model, error: String(err) });
      return;
    }
  }
  if (missing.length === 0) return;
  const asUser = (f: string) => (f.startsWith(dir + path.sep) ? path.join(userDir, path.relative(dir, f)) : f);
  const said = describeMissingImports(model, userDir, missing, { asUser });
  throw new EnvironmentError(model, said.message, { hint: said.hint, refused: true, diagnostics: said.diagnostics });
}

export function modelEnvironments(
  builder: EnvironmentBuilder,
  onNote?: (model: string, note: string) => void,
): ModelEnvironments {
  return {
    async prepare(model, dir, userDir, onBuild) {
      const file = requirementsOf(dir);
      const { python, config } = await isPythonModel(dir);
      if (!fs.existsSync(file)) {
        if (python && !(config !== undefined && setsExecutionEnv(config)))
          await refuseMissingImports(model, dir, userDir, builder.basePython, config);
        return undefined;
      }
      if (!python) {
        onNote?.(model, `${path.join(userDir, REQUIREMENTS_FILE)} is not used: only python models get an environment`);
        return undefined;
      }
      if (config !== undefined && setsExecutionEnv(config)) {
        onNote?.(
          model,
          `${path.join(userDir, REQUIREMENTS_FILE)} is not used: ${path.join(userDir, "config.pbtxt")} sets EXECUTION_ENV_PATH itself`,
        );
        return undefined;
      }
      const built = await builder.build({
        model,
        file,
        userFile: path.join(userDir, REQUIREMENTS_FILE),
        ...(onBuild ? { onBuild } : {}),
      });
      await refuseMissingImports(
        model,
        dir,
        userDir,
        built ? path.join(built.dir, "bin", "python") : builder.basePython,
        config,
      );
      return built;
    },
    async prepareRuntime(model, file, userFile, onBuild) {
      return builder.build({ model, file, userFile, ...(onBuild ? { onBuild } : {}) });
    },
  };
}
