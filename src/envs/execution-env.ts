/**
 * The python backend's own way to run a model in another environment: the model config's
 * `EXECUTION_ENV_PATH` parameter. Triton 2.51 takes a conda-pack tar.gz or, as used here, an
 * unpacked folder ("Returning canonical path since EXECUTION_ENV_PATH does not contain compressed
 * path"); the stub is then started as `source <env>/bin/activate && exec env
 * LD_LIBRARY_PATH=<env>/lib:$LD_LIBRARY_PATH triton_python_backend_stub ...`, and its embedded
 * Python takes `<env>/bin/python3` (first on PATH) and that folder's pyvenv.cfg as its prefix.
 */
export const EXECUTION_ENV_KEY = "EXECUTION_ENV_PATH";

/** Comments out, so a commented-out line is not taken for a setting. */
function withoutComments(config: string): string {
  return config.replace(/#[^\n]*/g, "");
}

/**
 * Whether the config names the python backend (the only one EXECUTION_ENV_PATH means anything to).
 * Text format quotes a string with `"` or `'`: both are Triton's.
 */
export function isPythonConfig(config: string): boolean {
  return /\bbackend\s*:\s*(["'])python\1/.test(withoutComments(config));
}

/**
 * Whether the user's config already picks an execution environment (theirs is kept, and its
 * requirements.txt is not installed: a conda-pack environment brings its own numpy).
 */
export function setsExecutionEnv(config: string): boolean {
  return new RegExp(`key\\s*:\\s*(["'])${EXECUTION_ENV_KEY}\\1`).test(withoutComments(config));
}

function quote(s: string): string {
  return `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

/**
 * The config with the parameter appended: `parameters` is a map field, so one more top-level
 * entry is valid text format wherever the user's config ends (after a comment, without a newline).
 */
export function withExecutionEnv(config: string, envDir: string): string {
  const sep = config.length === 0 || config.endsWith("\n") ? "" : "\n";
  return (
    `${config}${sep}\n# Added by triton-dev to the staged copy: the environment built from requirements.txt.\n` +
    `parameters: { key: "${EXECUTION_ENV_KEY}" value: { string_value: ${quote(envDir)} } }\n`
  );
}
