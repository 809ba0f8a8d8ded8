import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type Docker from "dockerode";
import { UserError } from "../../errors.js";
import { freePort, isPortFree } from "../../net/ports.js";
import { urlHost } from "../../net/url.js";
import { daemonMessage, statusOf } from "../clients/container/client.js";
import { isOurs, labels } from "./settings.js";

/** compose/ of this package: the same Prometheus and Grafana files for `docker compose` and `up --monitoring`. */
export const COMPOSE_DIR = fileURLToPath(new URL("../../../compose", import.meta.url));

export const DEFAULT_PROMETHEUS_IMAGE = "prom/prometheus:v2.55.1";
export const DEFAULT_GRAFANA_IMAGE = "grafana/grafana:11.3.0";

export interface MonitoringImages {
  prometheus: string;
  grafana: string;
}

export function monitoringImages(env: NodeJS.ProcessEnv): MonitoringImages {
  return {
    prometheus: env.TRITON_DEV_PROMETHEUS_IMAGE || DEFAULT_PROMETHEUS_IMAGE,
    grafana: env.TRITON_DEV_GRAFANA_IMAGE || DEFAULT_GRAFANA_IMAGE,
  };
}

export function networkName(containerName: string): string {
  return `${containerName}-net`;
}

export interface MonitoringFiles {
  prometheusConfig: string;
  grafanaProvisioning: string;
  grafanaDashboards: string;
}

export function monitoringFiles(composeDir = COMPOSE_DIR): MonitoringFiles {
  const f = {
    prometheusConfig: path.join(composeDir, "prometheus", "prometheus.yml"),
    grafanaProvisioning: path.join(composeDir, "grafana", "provisioning"),
    grafanaDashboards: path.join(composeDir, "grafana", "dashboards"),
  };
  for (const p of Object.values(f)) {
    if (!fs.existsSync(p))
      throw new UserError(`the monitoring stack's file ${p} is missing from this installation`, {
        hint: "Reinstall triton-dev; compose/ ships with it.",
      });
  }
  return f;
}

/** The network Triton, Prometheus and Grafana share, so Prometheus scrapes `triton:8002` as in compose.yaml. */
export async function ensureNetwork(
  docker: Docker,
  name: string,
  owner: { runId: string; runsDir: string },
): Promise<void> {
  const existing = await docker
    .getNetwork(name)
    .inspect()
    .catch((err) => (statusOf(err) === 404 ? undefined : Promise.reject(err)));
  if (existing) {
    if (!isOurs((existing as { Labels?: Record<string, string> }).Labels)) {
      throw new UserError(`a Docker network named ${name} exists and was not created by triton-dev`, {
        hint: `Remove or rename it (\`docker network rm ${name}\`), or run without --monitoring.`,
      });
    }
    return;
  }
  await docker.createNetwork({ Name: name, Driver: "bridge", Labels: labels("network", owner) });
}

async function pickPort(preferred: number, host: string): Promise<number> {
  return (await isPortFree(preferred, host)) ? preferred : freePort(host);
}

export interface MonitoringEndpoints {
  prometheus: string;
  grafana: string;
  containers: string[];
}

export interface StartMonitoringOptions {
  baseName: string;
  network: string;
  runId: string;
  runsDir: string;
  host: string;
  images: MonitoringImages;
  files?: MonitoringFiles;
}

/** Prometheus (9090) and Grafana (3000) beside Triton, on loopback; another free port when one is taken. */
export async function startMonitoring(docker: Docker, o: StartMonitoringOptions): Promise<MonitoringEndpoints> {
  const files = o.files ?? monitoringFiles();
  const owner = { runId: o.runId, runsDir: o.runsDir };
  const promPort = await pickPort(9090, o.host);
  const grafanaPort = await pickPort(3000, o.host);
  const started: string[] = [];
  const run = async (spec: Docker.ContainerCreateOptions, what: string) => {
    try {
      const c = await docker.createContainer(spec);
      started.push(c.id);
      await c.start();
    } catch (err) {
      throw new UserError(`could not start ${what} for --monitoring: ${daemonMessage(err)}`, {
        hint: "Run without --monitoring, or see `docker logs` of the container.",
        cause: err,
      });
    }
  };
  const net = (alias: string) => ({ NetworkingConfig: { EndpointsConfig: { [o.network]: { Aliases: [alias] } } } });
  try {
    await run(
      {
        name: `${o.baseName}-prometheus`,
        Image: o.images.prometheus,
        Cmd: [
          "--config.file=/etc/prometheus/prometheus.yml",
          "--storage.tsdb.path=/prometheus",
          "--web.listen-address=:9090",
        ],
        Labels: labels("prometheus", owner),
        ExposedPorts: { "9090/tcp": {} },
        HostConfig: {
          Binds: [`${files.prometheusConfig}:/etc/prometheus/prometheus.yml:ro`],
          PortBindings: { "9090/tcp": [{ HostIp: o.host, HostPort: String(promPort) }] },
          NetworkMode: o.network,
        },
        ...net("prometheus"),
      },
      "Prometheus",
    );
    await run(
      {
        name: `${o.baseName}-grafana`,
        Image: o.images.grafana,
        Env: [
          "GF_AUTH_ANONYMOUS_ENABLED=true",
          "GF_AUTH_ANONYMOUS_ORG_ROLE=Admin",
          "GF_AUTH_DISABLE_LOGIN_FORM=true",
          "GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH=/var/lib/grafana/dashboards/triton.json",
        ],
        Labels: labels("grafana", owner),
        ExposedPorts: { "3000/tcp": {} },
        HostConfig: {
          Binds: [
            `${files.grafanaProvisioning}:/etc/grafana/provisioning:ro`,
            `${files.grafanaDashboards}:/var/lib/grafana/dashboards:ro`,
          ],
          PortBindings: { "3000/tcp": [{ HostIp: o.host, HostPort: String(grafanaPort) }] },
          NetworkMode: o.network,
        },
        ...net("grafana"),
      },
      "Grafana",
    );
  } catch (err) {
    await removeContainers(docker, started);
    throw err;
  }
  const h = urlHost(o.host);
  return { prometheus: `http://${h}:${promPort}`, grafana: `http://${h}:${grafanaPort}`, containers: started };
}

/** Force-remove containers by id; ones already gone are fine. */
export async function removeContainers(docker: Docker, ids: string[]): Promise<void> {
  await Promise.all(
    ids.map((id) =>
      docker
        .getContainer(id)
        .remove({ force: true, v: true })
        .catch((err) => {
          if (statusOf(err) !== 404 && statusOf(err) !== 409) throw err;
        }),
    ),
  );
}
