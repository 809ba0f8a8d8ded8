/**
 * Removing our own files from /dev/shm, a folder every user writes. Node has no unlinkat, so the
 * folder is opened once (O_DIRECTORY|O_NOFOLLOW) and each name is reached through that handle's
 * /proc/self/fd/N: a link put where the folder was, or a folder of links under it, is never walked.
 * Only a bare name of a known pattern is taken (no slash, never a path another process reported),
 * and only a regular file of our uid (and, when given, the very inode that was mapped) is removed.
 *
 * What is left between the lstat and the unlink: the entry could be replaced by someone who may
 * rename or remove our file in that folder. In /dev/shm (sticky, 1777) that is only us and root,
 * and unlink never follows a link, so another user's swap can at most make us remove their own
 * entry of the same name, never a file elsewhere.
 */
import fs from "node:fs";
import path from "node:path";

const OPEN_FOLDER = fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW;

export type ShmRemoval =
  | { removed: true; bytes: number }
  | { removed: false; why: "bad-name" | "gone" | "not-a-file" | "not-ours" | "other-file" };

export interface ShmFolder {
  readonly dir: string;
  /** Remove `name` from the folder if it is a regular file of ours (and inode `ino`, when given). */
  remove(name: string, pattern: RegExp, ino?: number): ShmRemoval;
  close(): void;
}

/** Open `dir` for removals; undefined when it cannot be opened as a folder (gone, or a link). */
export function openShmFolder(dir = "/dev/shm", uid = process.geteuid?.() ?? 0): ShmFolder | undefined {
  let fd: number;
  try {
    fd = fs.openSync(dir, OPEN_FOLDER);
  } catch {
    return undefined;
  }
  const viaHandle = fs.existsSync(`/proc/self/fd/${fd}`);
  const at = (name: string) => (viaHandle ? `/proc/self/fd/${fd}/${name}` : path.join(dir, name));
  return {
    dir,
    remove(name, pattern, ino) {
      if (name.includes("/") || name === "." || name === ".." || !pattern.test(name))
        return { removed: false, why: "bad-name" };
      let st: fs.Stats;
      try {
        st = fs.lstatSync(at(name));
      } catch {
        return { removed: false, why: "gone" };
      }
      if (!st.isFile()) return { removed: false, why: "not-a-file" };
      if (st.uid !== uid) return { removed: false, why: "not-ours" };
      if (ino !== undefined && st.ino !== ino) return { removed: false, why: "other-file" };
      try {
        fs.unlinkSync(at(name));
      } catch {
        return { removed: false, why: "gone" };
      }
      return { removed: true, bytes: st.size };
    },
    close() {
      try {
        fs.closeSync(fd);
      } catch {
        // closed already
      }
    },
  };
}
