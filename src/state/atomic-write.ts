import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";

/** Write via a temp file in the same directory and rename, so readers never see a partial file. */
export async function writeFileAtomic(file: string, data: string, mode = 0o600): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString("hex")}.tmp`);
  try {
    await fs.writeFile(tmp, data, { mode });
    await fs.rename(tmp, file);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
}

/**
 * Replace an existing file in one rename, the new one taking the old one's mode (umask aside)
 * and, where this process may give it, its owner: the user's file stays theirs.
 */
export async function replaceFileAtomic(
  file: string,
  data: string,
  like: { mode: number; uid: number; gid: number },
): Promise<void> {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString("hex")}.tmp`);
  try {
    await fs.writeFile(tmp, data, { mode: like.mode, flag: "wx" });
    await fs.chmod(tmp, like.mode);
    const st = await fs.stat(tmp);
    if (st.uid !== like.uid || st.gid !== like.gid) {
      await fs.chown(tmp, like.uid, like.gid).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== "EPERM") throw err;
      });
    }
    await fs.rename(tmp, file);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
}
