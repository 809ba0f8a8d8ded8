/**
 * triton-dev runs what its home holds (the managed venv's Python, tritonserver, the python
 * backend's stub, the key library it preloads, the models' environments). A home another user
 * can change (pre-created under /tmp by them, or a folder on the way they can write) would have
 * us run their code, as root too: it is refused before anything in it runs or is read as ours.
 */
import fs from "node:fs";
import path from "node:path";
import { type TrustOptions, requireTrustedFolder } from "./folder-trust.js";

/** The folders under the home whose contents run. */
const RUN_FROM = ["venv", path.join("venv", "bin"), "backends", "lib", "envs"];

/**
 * Throw UntrustedFolderError (a UserError naming the folder and its owner) unless the home, every
 * folder above it (as written and where its links lead) and the folders in it whose files run
 * are ours or root's and writable by no one else. A home not made yet is judged by the folder it
 * would be made in. `what` names the setting it came from.
 */
export function requireTrustedHome(home: string, options: TrustOptions & { what?: string } = {}): void {
  const what = options.what ?? "TRITON_DEV_HOME";
  const hint = `Point ${what} at a folder of your own that no other user can write (the default is ~/.cache/triton-dev), or, if it is yours, make it so: \`chown -R $(id -u) ${home} && chmod go-w ${home}\`. Remove one another user made before using it.`;
  const trust = { ...options, lexical: true };
  let existing = path.resolve(home);
  while (!fs.existsSync(existing) && existing !== path.dirname(existing)) existing = path.dirname(existing);
  requireTrustedFolder(existing, `triton-dev will not use its home ${home} (${what})`, hint, trust);
  if (existing !== path.resolve(home)) return;
  for (const sub of RUN_FROM) {
    const dir = path.join(home, sub);
    if (fs.existsSync(dir))
      requireTrustedFolder(dir, `triton-dev will not run anything from ${dir} (under ${what})`, hint, trust);
  }
}

/**
 * Throw UntrustedFolderError unless the state folder (the run record, the run folders `down`
 * prunes) and every folder above it are ours or root's and writable by no one else. A record
 * another user can write would have `down` stop, and prune, whatever it names: every reader and
 * writer of the record checks here first. A folder not made yet is judged by the one it would be
 * made in.
 */
export function requireTrustedState(paths: { home: string; stateDir: string }, options: TrustOptions = {}): void {
  const underHome = path.resolve(paths.stateDir) === path.join(path.resolve(paths.home), "state");
  const what = underHome ? "TRITON_DEV_HOME's state folder" : "TRITON_DEV_STATE_DIR";
  const hint = `Nothing in it was read or stopped. Point ${underHome ? "TRITON_DEV_HOME" : "TRITON_DEV_STATE_DIR"} at a folder of your own that no other user can write, or, if it is yours, make it so: \`chown -R $(id -u) ${paths.stateDir} && chmod go-w ${paths.stateDir}\`. Remove one another user made before using it.`;
  let existing = path.resolve(paths.stateDir);
  while (!fs.existsSync(existing) && existing !== path.dirname(existing)) existing = path.dirname(existing);
  requireTrustedFolder(existing, `triton-dev will not use its state folder ${paths.stateDir} (${what})`, hint, {
    ...options,
    lexical: true,
  });
}
