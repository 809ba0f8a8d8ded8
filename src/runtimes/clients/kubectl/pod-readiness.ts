import type { WaitStrategy } from "../../../triton/readiness.js";
import type { Ports } from "../../driver.js";
import type { PodConnection } from "./connection.js";

export interface PodServingOptions {
  connection: PodConnection;
  /** Asks Triton through the port-forward (with the run's key). */
  client: { isLive(): Promise<boolean> };
  /** Where the pod runs, as the timeout message names it: "kind cluster NAME", "context NAME". */
  where: string;
  host: string;
  ports: Ports;
  /** Each step as it happens: what the pod waits for, then the port-forward. */
  progress(step: "pod" | "forward", message: string): void;
  /** The pod's failure (a ReadinessAbortedError from the connection) as the user reads it. */
  failure(err: unknown): unknown;
  /** Rejects when the pod can never serve however long it is given (cluster: its first copy failed). */
  blocker?: Promise<unknown>;
  /** Once the pod runs, before the port-forward starts (cluster: the sync starts following edits). */
  onRunning?(): void;
  /** Where a pod that does not come up says why (its events). */
  podHint: string;
}

/**
 * What "started" means for a run in a pod, waited for by the session on its clock within
 * --timeout: the Triton container runs (its startup probe passed), kubectl port-forward listens
 * on every port, and Triton answers live through it. Each check looks at the connection's last
 * poll and starts the port-forward once; nothing here waits by itself.
 */
export function podServing(o: PodServingOptions): WaitStrategy {
  let pod: string | undefined;
  let waitingFor = "";
  let listening = false;
  let failed: { err: unknown } | undefined;
  o.blocker?.catch((err: unknown) => (failed ??= { err }));
  return {
    get description() {
      return pod
        ? `Triton in pod ${pod}, through kubectl port-forward at ${o.host}:${o.ports.http}`
        : `the Triton pod in ${o.where}${waitingFor ? ` (${waitingFor})` : ""}`;
    },
    get timeoutHint() {
      if (!pod) return o.podHint;
      if (listening) return undefined;
      const problem = o.connection.forwardProblem;
      return `kubectl port-forward to pod ${pod} has not listened on ${o.host}:${o.ports.http}, ${o.ports.grpc} and ${o.ports.metrics}${problem ? ` (it said: ${problem})` : ""}; if another program holds one of them, choose others with --http-port/--grpc-port/--metrics-port.`;
    },
    async check() {
      if (failed) throw failed.err;
      if (!pod) {
        const running = await o.connection
          .runningNow((detail) => {
            waitingFor = detail;
            o.progress("pod", detail);
          })
          .catch((err: unknown) => {
            throw o.failure(err);
          });
        if (!running) return false;
        pod = running.pod;
        o.onRunning?.();
        o.progress(
          "forward",
          `port-forwarding ${o.host}:${o.ports.http}, ${o.ports.grpc}, ${o.ports.metrics} to pod ${pod}`,
        );
        o.connection.forward().then(
          () => (listening = true),
          (err: unknown) => (failed ??= { err }),
        );
        return false;
      }
      return listening && (await o.client.isLive());
    },
  };
}
