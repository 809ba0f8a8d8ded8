/**
 * auto_complete_config run as lint runs it: the managed environment's Python and the python
 * backend's own triton_python_backend_utils.py (the environment `triton-dev setup` makes), real
 * processes, a real listening socket. What Triton says about the same models is in
 * agreement.integration.test.ts.
 */
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import fsp from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { resolvePaths } from "../../src/config/paths.js";
import { type CompletionRequest, createConfigCompleter } from "../../src/repo/auto-complete-run.js";
import { contain, type ContainRequest } from "../../src/repo/model-code-sandbox.js";
import { removeTempRepos, tempRepo, writeFiles } from "./helpers.js";

/** Processes whose command line carries `mark`, zombies left out. */
function marked(mark: string): number[] {
  const found: number[] = [];
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (!fs.readFileSync(`/proc/${d}/cmdline`, "latin1").includes(mark)) continue;
      if (fs.readFileSync(`/proc/${d}/stat`, "utf8").split(") ")[1]?.startsWith("Z")) continue;
      found.push(Number(d));
    } catch {
      // gone
    }
  }
  return found;
}

afterAll(removeTempRepos);

const managed = fs.existsSync(path.join(resolvePaths().venv, "bin", "python"));

/** What Triton hands the backend for a python model without config.pbtxt. */
const HANDED = { name: "m", backend: "python", max_batch_size: 0, input: [], output: [] };

function modelPy(body: string, header = ""): string {
  return `import triton_python_backend_utils as pb_utils
${header}

class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
${body}
        return config
`;
}

async function model(files: Record<string, string>): Promise<CompletionRequest> {
  const repo = await tempRepo();
  await writeFiles(repo, Object.fromEntries(Object.entries(files).map(([k, v]) => [`m/${k}`, v])));
  const dir = path.join(repo, "m");
  return { model: "m", dir, file: path.join(dir, "1", "model.py"), config: HANDED };
}

/** Every path under a folder, to see that running the model's code wrote nothing there. */
async function listing(dir: string): Promise<string[]> {
  return (await fsp.readdir(dir, { recursive: true })).map(String).sort();
}

describe.skipIf(!managed)("running auto_complete_config", () => {
  const cacheDir = () => fs.mkdtempSync(path.join(os.tmpdir(), "triton-dev-ac-cache-"));

  it("completes with the backend's own ModelConfig, importing the model's modules, and writes nothing into the model", async () => {
    const req = await model({
      "1/model.py": modelPy(
        `        config.add_input({"name": helper.NAME, "data_type": "TYPE_FP32", "dims": [4]})
        config.set_max_batch_size(8)
        config.set_dynamic_batching()`,
        "from . import helper",
      ),
      "1/helper.py": 'NAME = "INPUT0"\n',
    });
    const before = await listing(req.dir);
    const out = await createConfigCompleter({ cacheDir: cacheDir() }).complete(req);
    expect(out).toMatchObject({
      outcome: "completed",
      config: {
        max_batch_size: 8,
        input: [{ name: "INPUT0", data_type: "TYPE_FP32", dims: [4] }],
        dynamic_batching: {},
      },
    });
    // No __pycache__ beside helper.py: the user's folder is never written.
    expect(await listing(req.dir)).toEqual(before);
  });

  it("runs the model's code without network: a listening socket on this machine is not reached", async () => {
    let connections = 0;
    const server = net.createServer((s) => {
      connections++;
      s.destroy();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const req = await model({
        "1/model.py": modelPy(
          `        import socket
        try:
            socket.create_connection(("127.0.0.1", ${port}), timeout=2).close()
            name = "REACHED"
        except OSError:
            name = "BLOCKED"
        config.add_input({"name": name, "data_type": "TYPE_FP32", "dims": [1]})`,
        ),
      });
      const out = await createConfigCompleter({ cacheDir: cacheDir() }).complete(req);
      expect(out).toMatchObject({ outcome: "completed", config: { input: [{ name: "BLOCKED" }] } });
      expect(connections).toBe(0);
    } finally {
      server.close();
    }
  });

  it.each([
    ["namespaces where the machine allows them", undefined],
    ["plain", "plain"],
  ])(
    "kills a hanging model and what it started in a new session once the time limit passes (%s)",
    async (_, containment) => {
      const mark = `td-hang-${randomUUID()}`;
      const req = await model({
        "1/model.py": modelPy(
          `        import subprocess, time
        subprocess.Popen(["setsid", "sh", "-c", "sleep 600; : ${mark}"])
        time.sleep(600)`,
        ),
      });
      const env = { ...process.env, ...(containment ? { TRITON_DEV_MODEL_CODE_CONTAINMENT: containment } : {}) };
      const started = Date.now();
      // Long enough for the model to reach its sleep (python and numpy start first, slowly on a busy
      // machine), so there is a child to kill: seen running while the model hangs.
      let seen = false;
      const watch = setInterval(() => (seen ||= marked(mark).length > 0), 100);
      const out = await createConfigCompleter({
        timeoutMs: 5000,
        cacheDir: cacheDir(),
        contain: (r) => contain({ ...r, env }),
      }).complete(req);
      clearInterval(watch);
      expect(out).toEqual({ outcome: "timeout", seconds: 5 });
      // Ended by the limit, not by the model (which sleeps 600 s); the bound is that and no more, so a
      // busy machine's slow python start-up and kill do not count against it.
      expect(Date.now() - started).toBeLessThan(60_000);
      expect(seen, "the model started its child").toBe(true);
      expect(marked(mark)).toEqual([]);
    },
    90_000,
  );

  it("answers once the driver has exited, though something it left behind still holds its output open", async () => {
    const req = await model({ "1/model.py": modelPy("        pass") });
    // Its own sleep, found again by its length (a fraction no other process uses).
    const mark = `30.${randomUUID().replace(/\D/g, "").slice(0, 9)}`;
    // A containment whose driver answers and exits while a process it started (outside any
    // group or namespace of ours, as a wrapper's child can be) keeps stderr and the answer's pipe.
    const out = await createConfigCompleter({
      cacheDir: cacheDir(),
      contain: async () => ({
        command: "sh",
        args: ["-c", `sleep ${mark} & printf '{"outcome":"absent"}' >&3`],
        env: process.env,
        cwd: os.tmpdir(),
        mode: "plain",
        cleanup: async () => {
          for (const pid of marked(mark)) process.kill(pid, "SIGKILL");
          // SIGKILL is delivered asynchronously: a loaded machine may list the process a moment longer.
          for (let i = 0; i < 100 && marked(mark).length; i++) await new Promise((r) => setTimeout(r, 20));
        },
      }),
    }).complete(req);
    expect(out).toEqual({ outcome: "absent" });
    expect(marked(mark)).toEqual([]);
  }, 20_000);

  it("says where the model's code raised, and answers the same content from its cache without running it", async () => {
    const runs = path.join(await tempRepo(), "runs.txt");
    const files = {
      "1/model.py": modelPy(
        `        open(${JSON.stringify(runs)}, "a").write("ran\\n")
        raise ValueError("no shapes")`,
      ),
    };
    const cache = cacheDir();
    const first = await model(files);
    // The model counts its runs in a file outside its scratch folder: the plain containment lets it.
    const plain = (r: ContainRequest) =>
      contain({ ...r, env: { ...process.env, TRITON_DEV_MODEL_CODE_CONTAINMENT: "plain" } });
    const out = await createConfigCompleter({ cacheDir: cache, contain: plain }).complete(first);
    expect(out).toMatchObject({ outcome: "raised", error: "ValueError: no shapes", file: first.file, line: 8 });
    // Another folder with the same content, another process's completer: the disk cache answers.
    const second = await model(files);
    const again = await createConfigCompleter({ cacheDir: cache, contain: plain }).complete(second);
    expect(again).toMatchObject({ outcome: "raised", file: second.file, line: 8 });
    expect(fs.readFileSync(runs, "utf8")).toBe("ran\n");
  });

  it("caches outcomes 0600 in a 0700 folder it makes, tightens what an older version left looser, and takes no file another user could have put there", async () => {
    const cache = path.join(cacheDir(), "cache", "auto-complete");
    const req = await model({ "1/model.py": modelPy("        config.set_max_batch_size(4)") });
    const first = await createConfigCompleter({ cacheDir: cache }).complete(req);
    expect(first).toMatchObject({ outcome: "completed", config: { max_batch_size: 4 } });
    const mode = (p: string) => fs.statSync(p).mode & 0o777;
    expect(mode(cache).toString(8)).toBe("700");
    expect(mode(path.dirname(cache)).toString(8)).toBe("700");
    const files = fs.readdirSync(cache);
    expect(files).toHaveLength(1);
    const file = path.join(cache, files[0]!);
    expect(mode(file).toString(8)).toBe("600");

    // As today's main left them: a 0755 folder and a 0644 file. Read from the cache, then tightened.
    fs.chmodSync(cache, 0o755);
    fs.chmodSync(file, 0o644);
    const again = await createConfigCompleter({ cacheDir: cache }).complete(req);
    expect(again).toEqual(first);
    expect(mode(cache).toString(8)).toBe("700");
    expect(mode(file).toString(8)).toBe("600");

    if (process.getuid?.() === 0) {
      // A file of another user's with an outcome of its choosing is not taken: the model runs again.
      fs.writeFileSync(file, JSON.stringify({ outcome: "completed", config: { ...HANDED, max_batch_size: 99 } }));
      fs.chownSync(file, 65534, 65534);
      const planted = await createConfigCompleter({ cacheDir: cache }).complete(req);
      expect(planted).toMatchObject({ outcome: "completed", config: { max_batch_size: 4 } });
    }
  }, 60_000);

  it("does not run a model with a requirements.txt whose environment it is not given", async () => {
    const req = await model({ "1/model.py": modelPy("        pass"), "requirements.txt": "tdhello==1.0\n" });
    const out = await createConfigCompleter({ cacheDir: cacheDir() }).complete(req);
    expect(out).toEqual({ outcome: "not-run", why: "environment not built" });
  });
});
