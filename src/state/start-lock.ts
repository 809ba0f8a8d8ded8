import fsp from "node:fs/promises";
import path from "node:path";
import { requireTrustedState } from "../config/home-trust.js";
import type { Paths } from "../config/paths.js";
import { UserError } from "../errors.js";
import { isOurProcess } from "./process.js";

export interface StartLock {
  /** Safe to call twice. */
  release(): Promise<void>;
}

interface Holder {
  pid: number;
  modelsDir: string;
  since: string;
}

/**
 * One `up` starts at a time per state folder. Between "no run is recorded" and "this run is
 * recorded" lie seconds (setup, planning, staging); two `up`s in that window would both start,
 * with one record naming one of them. The lock file is created exclusively; one left by an `up`
 * that died is taken over.
 */
export async function acquireStartLock(
  paths: Paths,
  modelsDir: string,
  execPath = process.execPath,
): Promise<StartLock> {
  const file = path.join(paths.stateDir, "start.lock");
  requireTrustedState(paths);
  // 0700: the run folders under it hold copies of the models' code and their logs.
  await fsp.mkdir(paths.stateDir, { recursive: true, mode: 0o700 });
  const me: Holder = { pid: process.pid, modelsDir, since: new Date().toISOString() };
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fh = await fsp.open(file, "wx", 0o600);
      await fh.writeFile(JSON.stringify(me) + "\n");
      await fh.close();
      let released = false;
      return {
        release: async () => {
          if (released) return;
          released = true;
          await fsp.rm(file, { force: true });
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const holder = await fsp
      .readFile(file, "utf8")
      .then((t) => JSON.parse(t) as Holder)
      .catch(() => undefined);
    if (holder && holder.pid !== process.pid && isOurProcess(holder.pid, execPath)) {
      throw new UserError(
        `another \`triton-dev up\` (pid ${holder.pid}, models ${holder.modelsDir}) is starting on this state folder since ${holder.since}`,
        {
          hint: "Wait for it to finish starting (`triton-dev status` then shows it), or stop it with `triton-dev down`.",
        },
      );
    }
    // Left by an `up` that is gone: take it over.
    await fsp.rm(file, { force: true });
  }
  throw new UserError(`could not take the start lock ${file}`, {
    hint: "Another `triton-dev up` keeps taking it; run `triton-dev status` to see what runs.",
  });
}
