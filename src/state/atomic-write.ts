import { randomBytes } from "node:crypto";
import fs from "node:fs";
import fsp, { type FileHandle } from "node:fs/promises";
import path from "node:path";
import { UserError } from "../errors.js";

// A new name only, never through a link: O_EXCL fails on any existing entry (a link included),
// O_NOFOLLOW says so twice. The file starts 0600 and gets its final mode once its owner is right.
const CREATE_NEW = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW;

function tempBeside(file: string): string {
  return path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString("hex")}.tmp`);
}

/** The temp file was replaced between our steps: someone else can write the folder. Nothing of theirs was changed. */
export class FolderChangedError extends UserError {
  override name = "FolderChangedError";
  constructor(
    readonly file: string,
    readonly folder: string,
  ) {
    super(
      `${file} was not replaced: another process swapped the file triton-dev was writing in ${folder} for its own before it was put in place`,
      {
        hint: `Another user can write ${folder}: keep the file in a folder only you can write (\`ls -ld ${folder}\`), then run the command again.`,
      },
    );
  }
}

/** Remove our temp file, and nothing put at its name by someone else. */
async function removeTemp(tmp: string, ours: fs.Stats | undefined): Promise<void> {
  const st = await fsp.lstat(tmp).catch(() => undefined);
  if (!st || !ours || st.ino !== ours.ino || st.dev !== ours.dev) return;
  await fsp.rm(tmp, { force: true });
}

/** Write via a temp file in the same directory and rename, so readers never see a partial file. */
export async function writeFileAtomic(file: string, data: string, mode = 0o600): Promise<void> {
  await fsp.mkdir(path.dirname(file), { recursive: true });
  const tmp = tempBeside(file);
  let fh: FileHandle | undefined;
  let ours: fs.Stats | undefined;
  try {
    fh = await fsp.open(tmp, CREATE_NEW, mode);
    ours = await fh.stat();
    await fh.writeFile(data);
    await fh.close();
    fh = undefined;
    await fsp.rename(tmp, file);
  } catch (err) {
    await fh?.close().catch(() => {});
    await removeTemp(tmp, ours);
    throw err;
  }
}

export interface ReplaceSteps {
  /**
   * Runs once the temp file exists, before anything is written to it: the moment another user who
   * can write the folder would swap it (tests play that user here).
   */
  afterTempCreated?: (tmp: string) => Promise<void> | void;
}

/**
 * Replace an existing file in one rename, the new one taking the old one's mode (umask aside)
 * and, where this process may give it, its owner: the user's file stays theirs.
 *
 * Mode and owner are set through the open handle (fchown, fchmod), never by path: a name in the
 * folder can be swapped for a link between two steps, the handle cannot. The rename is by name
 * (Node has no renameat2 or linkat of a handle), so what it put in place is checked to be our file;
 * anything else is reported (FolderChangedError) and nothing outside the folder was touched.
 */
export async function replaceFileAtomic(
  file: string,
  data: string,
  like: { mode: number; uid: number; gid: number },
  steps: ReplaceSteps = {},
): Promise<void> {
  const tmp = tempBeside(file);
  let fh: FileHandle | undefined;
  let ours: fs.Stats | undefined;
  try {
    fh = await fsp.open(tmp, CREATE_NEW, 0o600);
    ours = await fh.stat();
    await steps.afterTempCreated?.(tmp);
    await fh.writeFile(data);
    if (ours.uid !== like.uid || ours.gid !== like.gid) {
      await fh.chown(like.uid, like.gid).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== "EPERM") throw err;
      });
    }
    // After the chown, which clears set-id bits.
    await fh.chmod(like.mode);
    await fh.close();
    fh = undefined;
    await fsp.rename(tmp, file);
    const placed = await fsp.lstat(file);
    if (placed.ino !== ours.ino || placed.dev !== ours.dev) throw new FolderChangedError(file, path.dirname(file));
  } catch (err) {
    await fh?.close().catch(() => {});
    await removeTemp(tmp, ours);
    throw err;
  }
}
