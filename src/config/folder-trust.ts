/**
 * Whether a folder can be changed by someone other than us (and root): its owner, or anyone its
 * mode lets write it. A folder another user can change can have any of its entries swapped for a
 * link between two of our steps, so nothing of ours writes into it, or runs anything from it.
 */
import fs from "node:fs";
import path from "node:path";
import { UserError } from "../errors.js";

/** Why a folder is not ours to trust. */
export type FolderDistrust =
  | { folder: string; why: "owner"; uid: number; mode: number }
  | { folder: string; why: "writable"; uid: number; mode: number; by: "group" | "others" }
  | { folder: string; why: "not-a-folder"; uid: number; mode: number };

/** A folder (or one above it) that another user owns or can write: we do not write into it or run from it. */
export class UntrustedFolderError extends UserError {
  override name = "UntrustedFolderError";
  constructor(
    message: string,
    readonly distrust: FolderDistrust,
    hint: string,
  ) {
    super(message, { hint });
  }
}

export interface TrustOptions {
  /** Our effective uid (root's 0 is trusted besides it). */
  uid?: number;
  /** The user database, for the owner's name in messages. */
  passwdFile?: string;
  /** Also check the path as written, folder by folder (links on the way included), not only where it leads. */
  lexical?: boolean;
}

/**
 * The first folder from `dir` up to `/` that another user can change, or undefined when none can.
 * `dir` is resolved through its links first; each folder is then looked at without following one
 * (a link met there was put in meanwhile, and is distrusted). A world- or group-writable folder
 * with the sticky bit (/tmp) is fine above: there, others cannot rename or remove what is ours.
 */
export function untrustedFolder(dir: string, options: TrustOptions = {}): FolderDistrust | undefined {
  const me = options.uid ?? process.geteuid?.() ?? 0;
  const ours = (uid: number) => uid === me || uid === 0;
  const judge = (d: string, st: fs.Stats): FolderDistrust | undefined => {
    const mode = st.mode & 0o7777;
    if (!st.isDirectory()) return { folder: d, why: "not-a-folder", uid: st.uid, mode };
    if (!ours(st.uid)) return { folder: d, why: "owner", uid: st.uid, mode };
    const sticky = (mode & 0o1000) !== 0;
    if (!sticky && mode & 0o002) return { folder: d, why: "writable", uid: st.uid, mode, by: "others" };
    if (!sticky && mode & 0o020) return { folder: d, why: "writable", uid: st.uid, mode, by: "group" };
    return undefined;
  };
  if (options.lexical) {
    // The path as it is used: a link on the way that another user owns can be pointed elsewhere
    // at any time, and the folders holding the links must be trusted as well.
    const parts = path.resolve(dir).split(path.sep).filter(Boolean);
    for (let i = 0; i <= parts.length; i++) {
      const d = path.sep + parts.slice(0, i).join(path.sep);
      const st = fs.lstatSync(d);
      if (st.isSymbolicLink()) {
        if (!ours(st.uid)) return { folder: d, why: "owner", uid: st.uid, mode: st.mode & 0o7777 };
        continue;
      }
      const bad = judge(d, st);
      if (bad) return bad;
    }
  }
  for (let d = fs.realpathSync(dir); ; d = path.dirname(d)) {
    const bad = judge(d, fs.lstatSync(d));
    if (bad) return bad;
    if (d === path.dirname(d)) return undefined;
  }
}

/** `nobody (uid 65534)`; the uid alone when the user database does not name it. */
export function describeOwner(uid: number, passwdFile = "/etc/passwd"): string {
  try {
    for (const line of fs.readFileSync(passwdFile, "utf8").split("\n")) {
      const [name, , id] = line.split(":");
      if (name && Number(id) === uid && id !== "") return `${name} (uid ${uid})`;
    }
  } catch {
    // no user database: the uid says enough
  }
  return `uid ${uid}`;
}

/** What is wrong with the folder, in words: "/tmp/x is owned by nobody (uid 65534)". */
export function describeDistrust(d: FolderDistrust, options: TrustOptions = {}): string {
  const mode = `mode ${d.mode.toString(8).padStart(4, "0")}`;
  if (d.why === "owner") return `${d.folder} is owned by ${describeOwner(d.uid, options.passwdFile)}, another user`;
  if (d.why === "writable")
    return `${d.folder} can be written by ${d.by === "others" ? "every user" : "its group"} (${mode}, no sticky bit)`;
  return `${d.folder} is not a folder`;
}

/**
 * Throw UntrustedFolderError when `dir` or a folder above it can be changed by another user.
 * `what` says what we were about to do there; `hint` what the user can do instead.
 */
export function requireTrustedFolder(dir: string, what: string, hint: string, options: TrustOptions = {}): void {
  const d = untrustedFolder(dir, options);
  if (d) throw new UntrustedFolderError(`${what}: ${describeDistrust(d, options)}`, d, hint);
}
