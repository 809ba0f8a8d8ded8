/**
 * The edit written to the user's file: the text it was computed from checked, the old bytes kept
 * in a `.bak` beside it, the new text put in place in one rename, links only into trusted folders.
 */
import fsp from "node:fs/promises";
import path from "node:path";
import { explainFsError } from "../../errors.js";
import { log as rootLog } from "../../log/logger.js";
import { FolderChangedError, type ReplaceSteps, replaceFileAtomic } from "../../state/atomic-write.js";
import { type TrustOptions, UntrustedFolderError, requireTrustedFolder } from "../../config/folder-trust.js";
import { positionAt } from "../textproto.js";
import { applyConfigEdits } from "./apply.js";
import { ConfigEditError, type ConfigEdits } from "./types.js";

const log = rootLog.child("config-edit");

export interface AppliedConfigEdits {
  /** False when the file already said what the edits say: nothing was written, no backup made. */
  changed: boolean;
  /** The copy of the file as it was, beside it; ignored by the watcher and staging (a `.bak` file). */
  backup: string | undefined;
  /** The file's text now. */
  text: string;
}

export interface ApplyToFileOptions {
  /** The clock that names the backup. */
  now?: () => Date;
  /** The replace's own steps (tests play another user between them). */
  replaceSteps?: ReplaceSteps;
  /** Trust options of the folder check (the uid counted as ours). */
  trust?: TrustOptions;
}

/** `config.pbtxt.triton-dev-backup-20261202T014500Z.bak`: `.bak` is editor litter to the watcher and staging. */
export function backupName(file: string, at: Date): string {
  const stamp = at
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z");
  return `${path.basename(file)}.triton-dev-backup-${stamp}.bak`;
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Apply the edits to the file: its old bytes are kept in a backup beside it, then the new text
 * replaces it in one rename with its mode and owner. `readText` is the text the edits were
 * computed from: a file that no longer holds it is refused. A link is written through to the file
 * it names, so the link stays a link, but only into a folder that no other user owns or can write
 * (that user could swap the file there for a link of theirs while it is written): lint still reads
 * such a link, an edit is refused with what to do.
 */
export async function applyConfigEditsToFile(
  file: string,
  edits: ConfigEdits,
  readText?: string,
  options: ApplyToFileOptions = {},
): Promise<AppliedConfigEdits> {
  const now = options.now ?? (() => new Date());
  const io = (err: unknown, what: string): ConfigEditError => {
    const e = explainFsError(err);
    return new ConfigEditError(`${what} ${e.is}`, "io", { file, hint: e.hint, cause: err });
  };
  let real: string;
  let bytes: Buffer;
  try {
    real = await fsp.realpath(file);
  } catch (err) {
    throw io(err, file);
  }
  // Without a link the folder is the user's repository: the temp file and the backup are new
  // names there (O_EXCL) and mode and owner go through handles, so another user who can write it
  // can at most break this edit. A folder above it swapped for a link between these steps would
  // move the edit (a file named like this one holding its text) elsewhere; Node has no openat to
  // pin the folder, and the content check against the text read first narrows it further.
  if (real !== path.resolve(file)) {
    try {
      requireTrustedFolder(
        path.dirname(real),
        `${file} was not edited: it is a link to ${real}, and a file there is not ours to write`,
        `Copy the file into your repository in place of the link (\`cp --remove-destination ${real} ${file}\`), or keep it in a folder only you (or root) own and can write, then run the command again.`,
        options.trust,
      );
    } catch (err) {
      if (err instanceof UntrustedFolderError)
        throw new ConfigEditError(err.message, "unsafe-folder", { file, hint: err.hint, cause: err });
      throw io(err, file);
    }
  }
  try {
    bytes = await fsp.readFile(real);
  } catch (err) {
    throw io(err, file);
  }
  const text = decode(bytes, file);
  if (readText !== undefined && text !== readText) {
    throw new ConfigEditError(`${file} changed since it was read; it was not edited`, "changed", {
      file,
      hint: "Run the command again, so it works from the file as it is now.",
    });
  }
  const out = applyConfigEdits(text, edits, file);
  if (out === text) return { changed: false, backup: undefined, text };
  let stat;
  try {
    stat = await fsp.stat(real);
  } catch (err) {
    throw io(err, file);
  }
  const backup = await writeBackup(real, bytes, stat.mode & 0o7777, now(), io);
  try {
    const again = await fsp.readFile(real);
    if (!again.equals(bytes)) {
      throw new ConfigEditError(`${file} changed while it was being edited; it was not edited`, "changed", {
        file,
        hint: `Run the command again. The copy taken before is ${backup}.`,
      });
    }
    await replaceFileAtomic(
      real,
      out,
      { mode: stat.mode & 0o7777, uid: stat.uid, gid: stat.gid },
      options.replaceSteps,
    );
  } catch (err) {
    if (err instanceof ConfigEditError) throw err;
    if (err instanceof FolderChangedError)
      throw new ConfigEditError(err.message, "unsafe-folder", {
        file,
        hint: `${err.hint ?? ""} The file's text from before is in ${backup}.`.trim(),
        cause: err,
      });
    throw io(err, file);
  }
  log.debug(`edited ${real}; the old text is in ${backup}`);
  return { changed: true, backup, text: out };
}

function decode(bytes: Buffer, file: string): string {
  try {
    return utf8.decode(bytes);
  } catch (err) {
    const lossy = bytes.toString("utf8");
    const at = positionAt(lossy, Math.max(0, lossy.indexOf("\uFFFD")));
    throw new ConfigEditError(`${file}:${at.line}:${at.column}: a byte that is not UTF-8 text`, "syntax", {
      file,
      line: at.line,
      column: at.column,
      hint: "Save the file as UTF-8; an edit could not keep its other bytes as they are.",
      cause: err,
    });
  }
}

async function writeBackup(
  real: string,
  bytes: Buffer,
  mode: number,
  at: Date,
  io: (err: unknown, what: string) => ConfigEditError,
): Promise<string> {
  const first = path.join(path.dirname(real), backupName(real, at));
  // Two applies within a second get distinct copies; bounded, as a full folder ends the loop too.
  for (let n = 1; n <= 100; n++) {
    const candidate = n === 1 ? first : first.replace(/\.bak$/, `-${n}.bak`);
    try {
      await fsp.writeFile(candidate, bytes, { flag: "wx", mode });
      return candidate;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw io(err, candidate);
    }
  }
  throw new ConfigEditError(`${real} has 100 backups from this second already`, "io", {
    file: real,
    hint: "Remove old config.pbtxt.triton-dev-backup-*.bak files.",
  });
}
