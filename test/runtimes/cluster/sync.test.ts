/**
 * The repository sync of the cluster runtime: the real tar stream and the real script the sync
 * container runs, on real folders. Only `kubectl exec` itself is stood in for (the spawn function
 * KubectlTools takes): the command after `--` runs here, with the tar on its stdin, in a folder
 * standing for the pod's volume (TRITON_DEV_SYNC_ROOT).
 */
import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { execa } from "execa";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FakeClock } from "../../../src/fake-clock.js";
import { RepositorySync } from "../../../src/runtimes/cluster/sync.js";
import { KubectlTools } from "../../../src/runtimes/clients/kubectl/tools.js";

let dir = "";
let runDir = "";
let pod = "";
let calls: string[][] = [];
let pods: Record<string, string> = {};

/** `kubectl exec ... -- CMD`: CMD runs here in the named pod's folder. */
const standIn = ((file: string, args: string[], opts: Record<string, unknown>) => {
  if (file !== "kubectl") throw new Error(`unexpected ${file}`);
  calls.push(args);
  const name = args.find((a) => a.startsWith("pod/"))!.slice(4);
  const cmd = args.slice(args.indexOf("--") + 1);
  return execa(cmd[0]!, cmd.slice(1), { ...opts, env: { ...process.env, TRITON_DEV_SYNC_ROOT: pods[name]! } });
}) as unknown as typeof execa;

async function publish(model: string, gen: number, body: string): Promise<void> {
  const snap = path.join(runDir, "store", `${model}@${gen}`);
  await fsp.mkdir(path.join(snap, "1"), { recursive: true });
  await fsp.writeFile(path.join(snap, "1", "model.py"), body);
  await fsp.writeFile(path.join(snap, "config.pbtxt"), `name: "${model}"\n`);
  const tmp = path.join(runDir, "repository", `.${model}.tmp`);
  await fsp.symlink(`../store/${model}@${gen}`, tmp);
  await fsp.rename(tmp, path.join(runDir, "repository", model));
}

beforeEach(async () => {
  dir = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-sync-"));
  runDir = path.join(dir, "run");
  await fsp.mkdir(path.join(runDir, "repository"), { recursive: true });
  await fsp.mkdir(path.join(runDir, "store"), { recursive: true });
  await fsp.mkdir(path.join(runDir, "key"), { recursive: true });
  await fsp.writeFile(path.join(runDir, "key", "repository.key"), "k1\n", { mode: 0o600 });
  pods = { a: path.join(dir, "pod-a"), b: path.join(dir, "pod-b") };
  for (const p of Object.values(pods)) await fsp.mkdir(p);
  pod = "a";
  calls = [];
});

afterEach(async () => {
  await fsp.rm(dir, { recursive: true, force: true });
});

function newSync(
  synced: Array<{ pod: string; snapshots: string[]; full: boolean }> = [],
  clock?: FakeClock,
  onCopy?: () => void,
) {
  return new RepositorySync({
    tools: new KubectlTools(standIn, process.env),
    context: "team",
    namespace: "ml",
    runDir,
    pod: () => pod || undefined,
    onSynced: (s) => {
      synced.push({ pod: s.pod, snapshots: s.snapshots, full: s.full });
      onCopy?.();
    },
    settleMs: 20,
    ...(clock ? { clock } : {}),
  });
}

const served = (root: string, model: string) => fs.readlinkSync(path.join(root, "repository", model));

describe("RepositorySync", () => {
  it("copies the run folder, then only new snapshots; links are renamed into place; withdrawn models go", async () => {
    await publish("m", 1, "x + 1");
    await publish("n", 1, "x * 2");
    const synced: Array<{ pod: string; snapshots: string[]; full: boolean }> = [];
    const sync = newSync(synced);
    await sync.sync();
    const root = pods.a!;
    expect(served(root, "m")).toBe("../store/m@1");
    expect(fs.readFileSync(path.join(root, "repository", "m", "1", "model.py"), "utf8")).toBe("x + 1");
    expect(fs.readFileSync(path.join(root, "key", "repository.key"), "utf8")).toBe("k1\n");
    expect(fs.existsSync(path.join(root, ".triton-dev-synced"))).toBe(true);
    expect(fs.existsSync(path.join(root, ".incoming"))).toBe(false);
    expect(calls[0]).toEqual(
      expect.arrayContaining(["--context=team", "--namespace=ml", "exec", "-i", "pod/a", "--container=sync"]),
    );

    await publish("m", 2, "x + 5");
    await sync.sync();
    expect(synced.at(-1)).toEqual({ pod: "a", snapshots: ["m@2"], full: false });
    expect(served(root, "m")).toBe("../store/m@2");
    expect(fs.readFileSync(path.join(root, "repository", "m", "1", "model.py"), "utf8")).toBe("x + 5");

    await fsp.rm(path.join(runDir, "repository", "n"));
    await sync.sync();
    expect(fs.existsSync(path.join(root, "repository", "n"))).toBe(false);
    expect(served(root, "m")).toBe("../store/m@2");
    // Nothing of the copy is left on this machine.
    expect((await fsp.readdir(runDir)).sort()).toEqual(["key", "repository", "store"]);
  });

  it("a new pod (the Deployment replaced it) gets the whole folder again, key included", async () => {
    await publish("m", 1, "x + 1");
    const synced: Array<{ pod: string; snapshots: string[]; full: boolean }> = [];
    const sync = newSync(synced);
    await sync.sync();
    pod = "b";
    expect(sync.needsFullCopy()).toBe(true);
    await sync.sync();
    expect(synced.at(-1)).toEqual({ pod: "b", snapshots: ["m@1"], full: true });
    expect(served(pods.b!, "m")).toBe("../store/m@1");
    expect(fs.readFileSync(path.join(pods.b!, "key", "repository.key"), "utf8")).toBe("k1\n");
    expect(sync.needsFullCopy()).toBe(false);
  });

  it("a second watcher's whole copy to the same pod leaves the snapshots it has untouched (Triton's poll sees no change)", async () => {
    await publish("m", 1, "x + 1");
    await newSync().sync();
    const snap = path.join(pods.a!, "store", "m@1");
    const before = fs.statSync(path.join(snap, "1", "model.py"));
    const dirBefore = fs.statSync(snap);
    // The detached run's watcher cannot know what `up` sent: it copies everything once more.
    const synced: Array<{ pod: string; snapshots: string[]; full: boolean }> = [];
    await newSync(synced).sync();
    expect(synced.at(-1)).toEqual({ pod: "a", snapshots: ["m@1"], full: true });
    const after = fs.statSync(path.join(snap, "1", "model.py"));
    expect([after.ino, after.ctimeMs, fs.statSync(snap).ino]).toEqual([before.ino, before.ctimeMs, dirBefore.ino]);
    expect(served(pods.a!, "m")).toBe("../store/m@1");
    expect(fs.existsSync(path.join(pods.a!, ".incoming"))).toBe(false);
  });

  it("watching: a publish in the staging repository reaches the pod; no pod yet means no copy", async () => {
    pod = "";
    const clock = new FakeClock();
    const synced: Array<{ pod: string; snapshots: string[]; full: boolean }> = [];
    // The copy a closed window started, awaited: the loop below never waits on real time.
    let copiedNow = () => {};
    const copied = () => new Promise<void>((resolve) => (copiedNow = resolve));
    const sync = newSync(synced, clock, () => copiedNow());
    sync.watch();
    try {
      await publish("m", 1, "x + 1");
      // The publish's events (fs.watch, real) open the settle window; it closes on the fake clock.
      await clock.waiting();
      await clock.advance(20);
      expect(calls).toEqual([]);
      pod = "a";
      await publish("m", 2, "x + 2");
      // Each event of the publish opens the window again; a copy runs once one closes.
      for (let i = 0; i < 20 && !fs.existsSync(path.join(pods.a!, "repository", "m")); i++) {
        await clock.waiting();
        const done = copied();
        await clock.advance(20);
        await done;
      }
      expect(synced[0]).toEqual({ pod: "a", snapshots: ["m@1", "m@2"], full: true });
      expect(served(pods.a!, "m")).toBe("../store/m@2");
    } finally {
      sync.stop();
    }
  });

  it("input the exec stream cuts short is refused whole, sent again, and after three tries named as such", async () => {
    await publish("m", 1, "x + 1");
    let tries = 0;
    // As containerd 1.6's CRI streaming does: the command's stdin ends after the first 32 KiB at most.
    const cutting = ((file: string, args: string[], opts: { inputFile?: string }) => {
      tries++;
      const cut = path.join(dir, `cut-${tries}`);
      fs.writeFileSync(cut, fs.readFileSync(opts.inputFile!).subarray(0, 1000));
      const cmd = args.slice(args.indexOf("--") + 1);
      return execa(cmd[0]!, cmd.slice(1), {
        inputFile: cut,
        reject: false,
        env: { ...process.env, TRITON_DEV_SYNC_ROOT: pods.a! },
      });
    }) as unknown as typeof execa;
    const sync = new RepositorySync({
      tools: new KubectlTools(cutting, process.env),
      context: "team",
      namespace: "ml",
      runDir,
      pod: () => "a",
    });
    const err = await sync.sync().catch((e: unknown) => e);
    expect(tries).toBe(3);
    expect((err as Error).name).toBe("SyncError");
    expect((err as Error).message).toMatch(
      /reached pod a incomplete 3 times \(last: 1000 of \d+ bytes\): the cluster's exec stream cut the input short/,
    );
    // Nothing half-unpacked: no link, no marker.
    expect(fs.existsSync(path.join(pods.a!, "repository", "m"))).toBe(false);
    expect(fs.existsSync(path.join(pods.a!, ".triton-dev-synced"))).toBe(false);
  });

  it("a copy the pod refuses is a SyncError naming the right it needs", async () => {
    await publish("m", 1, "x");
    const refusing = ((file: string, args: string[]) => {
      calls.push(args);
      return execa("sh", [
        "-c",
        'echo \'Error from server (Forbidden): pods "a" is forbidden: User "u" cannot create resource "pods/exec"\' >&2; exit 1',
      ]);
    }) as unknown as typeof execa;
    const sync = new RepositorySync({
      tools: new KubectlTools(refusing, process.env),
      context: "team",
      namespace: "ml",
      runDir,
      pod: () => "a",
    });
    const err = await sync.sync().catch((e: unknown) => e);
    expect((err as Error).name).toBe("SyncError");
    expect((err as Error).message).toMatch(
      /could not copy the staged models into pod a: .*cannot create resource "pods\/exec"/,
    );
    expect((err as { hint: string }).hint).toContain("pods/exec");
  });
});
