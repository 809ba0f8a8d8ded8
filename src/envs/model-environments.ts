import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import type { BuiltEnvironment, EnvironmentBuilder } from "./builder.js";
import { isPythonConfig, setsExecutionEnv } from "./execution-env.js";
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

export function modelEnvironments(
  builder: EnvironmentBuilder,
  onNote?: (model: string, note: string) => void,
): ModelEnvironments {
  return {
    async prepare(model, dir, userDir, onBuild) {
      const file = requirementsOf(dir);
      if (!fs.existsSync(file)) return undefined;
      const { python, config } = await isPythonModel(dir);
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
      return builder.build({
        model,
        file,
        userFile: path.join(userDir, REQUIREMENTS_FILE),
        ...(onBuild ? { onBuild } : {}),
      });
    },
    async prepareRuntime(model, file, userFile, onBuild) {
      return builder.build({ model, file, userFile, ...(onBuild ? { onBuild } : {}) });
    },
  };
}
