import { execFile, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import type Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/net/ports.js";
import { COMPOSE_DIR } from "../../src/runtimes/docker/monitoring.js";
import { TritonHttpClient } from "../../src/triton/http-client.js";
import { copySampleModels, freePorts, portArgs, ROOT, runCli, tempDir, testEnv } from "../helpers/cli.js";
import {
  buildTestImage,
  dockerAvailability,
  LocalRegistry,
  ourContainers,
  removeImage,
  removeTestImages,
} from "../fixtures/docker/harness.js";

/**
 * The monitoring half of the docker runtime. Grafana's image cannot be had here (no registry
 * outside this machine, and Grafana is not a Debian package), so `up --monitoring` is checked
 * to fail plainly without it; Prometheus runs for real as Debian's binary on the host, scraping
 * the Triton container that triton-dev started, with compose/'s scrape config, and answers
 * every query of the provisioned dashboard (the article's four, corrected) after a short load.
 */
const availability = await dockerAvailability();
const prometheusBin = ["/usr/bin/prometheus", "/usr/local/bin/prometheus"].find((p) => fs.existsSync(p));
const skip = !availability.ok
  ? availability.reason
  : !prometheusBin
    ? "Debian's prometheus is not installed (.ci/run installs it)"
    : "";
if (skip) console.warn(`docker monitoring tests skipped: ${skip}`);

interface PromResult {
  status: string;
  data: { resultType: string; result: Array<{ metric: Record<string, string>; value: [number, string] }> };
}

const MODEL = "bert_tokenizer";

describe.skipIf(!!skip)(
  `monitoring: compose/'s Prometheus config and the dashboard's queries against Triton in Docker${skip ? ` (skipped: ${skip})` : ""}`,
  () => {
    const docker = (availability as { docker: Docker }).docker;
    const registry = new LocalRegistry();
    let image = "";
    let env: NodeJS.ProcessEnv;
    let ports: { http: number; grpc: number; metrics: number };
    let models: string;
    let prometheus: ChildProcess | undefined;
    let promUrl = "";

    const query = async (expr: string): Promise<PromResult> => {
      const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
      return (await res.json()) as PromResult;
    };

    beforeAll(async () => {
      const built = await buildTestImage();
      await registry.start(built.registryDir);
      image = registry.ref(built);
      await removeTestImages(docker, built);
      env = await testEnv();
      ports = await freePorts();
      models = await copySampleModels();
      const up = await runCli(
        ["up", "--runtime", "docker", "--detach", "--image", image, "--models", models, ...portArgs(ports)],
        env,
      );
      expect(up.stderr).toBe("");
      expect(up.code).toBe(0);
    }, 900_000);

    afterAll(async () => {
      if (prometheus && prometheus.exitCode === null) {
        const gone = new Promise((r) => prometheus!.once("exit", r));
        prometheus.kill("SIGTERM");
        await gone;
      }
      if (env) await runCli(["down"], env);
      await registry.stop();
      if (image) await removeImage(docker, image).catch(() => {});
    }, 120_000);

    it("up --monitoring without the Grafana image fails at once with what to do, and starts nothing", async () => {
      // Another state folder and project: a separate user's first `up --monitoring`. The Triton
      // image stands in for Prometheus' (present), so the Grafana pull is what fails.
      const e2 = await testEnv({ TRITON_DEV_PROMETHEUS_IMAGE: image });
      const other = await copySampleModels();
      const t0 = Date.now();
      const r = await runCli(
        [
          "up",
          "--runtime",
          "docker",
          "--monitoring",
          "--detach",
          "--image",
          image,
          "--models",
          other,
          ...portArgs(await freePorts()),
        ],
        e2,
      );
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/error: could not pull the Grafana \(--monitoring\) image grafana\/grafana:11\.3\.0: /);
      expect(r.stderr).toMatch(
        /hint: This machine cannot reach Docker Hub\. Pull or load the image where it can \(`docker pull grafana\/grafana:11\.3\.0`/,
      );
      expect(Date.now() - t0).toBeLessThan(30_000);
      expect(await ourContainers(docker, path.join(e2.TRITON_DEV_STATE_DIR!, "runs"))).toEqual([]);
      expect(
        await docker.listNetworks({ filters: JSON.stringify({ label: ["dev.triton-dev.tool=triton-dev"] }) }),
      ).toEqual([]);
    });

    it("compose/ holds a valid Prometheus config and a dashboard with the article's four queries", async () => {
      const promtool = path.join(path.dirname(prometheusBin!), "promtool");
      if (fs.existsSync(promtool)) {
        const out = await new Promise<string>((resolve, reject) =>
          execFile(
            promtool,
            ["check", "config", path.join(COMPOSE_DIR, "prometheus", "prometheus.yml")],
            (err, stdout, stderr) => (err ? reject(new Error(String(stderr))) : resolve(String(stdout))),
          ),
        );
        expect(out).toMatch(/SUCCESS/);
      }
      expect(COMPOSE_DIR).toBe(path.join(ROOT, "compose"));
      const compose = await fsp.readFile(path.join(COMPOSE_DIR, "compose.yaml"), "utf8");
      for (const flag of [
        "--model-control-mode=poll",
        "--repository-poll-secs=30",
        "--log-verbose=1",
        "--metrics-config=summary_latencies=true",
      ])
        expect(compose).toContain(flag);
      expect(compose).toMatch(/shm_size: 1g/);
      expect(compose).toMatch(/127\.0\.0\.1:8002:8002/);
      const dash = JSON.parse(
        await fsp.readFile(path.join(COMPOSE_DIR, "grafana", "dashboards", "triton.json"), "utf8"),
      );
      const refIds = dash.panels.flatMap((p: { targets?: Array<{ refId: string }> }) =>
        (p.targets ?? []).map((t) => t.refId),
      );
      expect(refIds).toEqual([
        "gpu_utilization",
        "queue_p99",
        "queue_mean",
        "throughput",
        "compute_p95",
        "compute_mean",
      ]);
      const note = dash.panels.find((p: { type: string }) => p.type === "text").options.content as string;
      expect(note).toMatch(/no latency histograms/);
      expect(note).toMatch(/summary_latencies=true/);
    });

    it("Prometheus scrapes the container's metrics and every dashboard query returns data after a short load", async () => {
      // compose/'s config with the target the host sees (the container's loopback port) and a
      // 1 s interval instead of 15 s, so the test needs seconds rather than minutes of samples.
      const dir = await tempDir("prometheus");
      const config = (await fsp.readFile(path.join(COMPOSE_DIR, "prometheus", "prometheus.yml"), "utf8"))
        .replace(/triton:8002/, `127.0.0.1:${ports.metrics}`)
        .replace(/scrape_interval: 15s/g, "scrape_interval: 1s");
      expect(config).toContain(`127.0.0.1:${ports.metrics}`);
      await fsp.writeFile(path.join(dir, "prometheus.yml"), config);
      const promPort = await freePort();
      promUrl = `http://127.0.0.1:${promPort}`;
      prometheus = spawn(
        prometheusBin!,
        [
          `--config.file=${path.join(dir, "prometheus.yml")}`,
          `--storage.tsdb.path=${path.join(dir, "data")}`,
          `--web.listen-address=127.0.0.1:${promPort}`,
        ],
        { stdio: "ignore" },
      );
      const deadline = Date.now() + 30_000;
      for (;;) {
        const up = await query('up{job="triton"}').catch(() => undefined);
        if (up?.data?.result?.[0]?.value[1] === "1") break;
        if (Date.now() > deadline)
          throw new Error(`Prometheus did not scrape Triton within 30 s: ${JSON.stringify(up)}`);
        await new Promise((r) => setTimeout(r, 500));
      }

      // A short closed-loop load: 4 concurrent clients for 8 s, bounded in time and count.
      const client = new TritonHttpClient(`http://127.0.0.1:${ports.http}`, { timeoutMs: 30_000 });
      const until = Date.now() + 8_000;
      let sent = 0;
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          while (Date.now() < until && sent < 5_000) {
            sent++;
            await client.infer(MODEL, [
              {
                name: "TEXT_INPUT",
                shape: [1, 1],
                datatype: "BYTES",
                data: [`request ${sent}: a sentence to tokenize`],
              },
            ]);
          }
        }),
      );
      expect(sent).toBeGreaterThan(20);
      await new Promise((r) => setTimeout(r, 3_000)); // a few more scrapes

      const dash = JSON.parse(
        await fsp.readFile(path.join(COMPOSE_DIR, "grafana", "dashboards", "triton.json"), "utf8"),
      );
      const targets = dash.panels.flatMap(
        (p: { targets?: Array<{ refId: string; expr: string }> }) => p.targets ?? [],
      ) as Array<{ refId: string; expr: string }>;
      const values: Record<string, number> = {};
      for (const t of targets) {
        const expr = t.expr.replace(/\$model/g, MODEL);
        const r = await query(expr);
        expect(r.status, `${t.refId}: ${expr}`).toBe("success");
        if (t.refId === "gpu_utilization") {
          // DCGM exports nv_gpu_utilization only where there is an NVIDIA GPU; none here.
          expect(r.data.result).toEqual([]);
          continue;
        }
        expect(r.data.result.length, `${t.refId} returned no series: ${expr}`).toBe(1);
        const v = Number(r.data.result[0]!.value[1]);
        expect(Number.isFinite(v), `${t.refId} = ${v}`).toBe(true);
        values[t.refId] = v;
      }
      expect(values.throughput).toBeGreaterThan(0);
      for (const k of ["queue_p99", "queue_mean", "compute_p95", "compute_mean"])
        expect(values[k]).toBeGreaterThanOrEqual(0);
      expect(values.compute_p95).toBeGreaterThan(0);
      console.info(`dashboard queries for ${MODEL} after ${sent} requests: ${JSON.stringify(values)}`);
    }, 120_000);
  },
);
