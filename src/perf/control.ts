import {
  TritonGrpcClient,
  TritonGrpcError,
  type ModelConfigSummary,
  type StatisticsJson,
} from "../triton/grpc-client.js";
import {
  TritonHttpClient,
  TritonHttpError,
  TritonUnreachableError,
  type ModelMetadata,
} from "../triton/http-client.js";
import type { Protocol } from "./protocol.js";

/**
 * What perf asks the server besides inference: health, metadata, configuration, statistics.
 * Spoken over the same protocol as the load, so `-i grpc -u host:8001` needs no HTTP endpoint.
 */
export interface ControlClient {
  readonly protocol: Protocol;
  readonly endpoint: string;
  isLive(): Promise<boolean>;
  /** `version`: that version of the model; absent, the one the server picks (its latest served). */
  isModelReady(model: string, version?: string): Promise<boolean>;
  modelMetadata(model: string, version?: string): Promise<ModelMetadata>;
  modelConfig(model: string, version?: string): Promise<ModelConfigSummary>;
  modelStatistics(model?: string, version?: string): Promise<StatisticsJson>;
  close(): void;
}

/** The server said the model does not exist (as opposed to: not reachable, not ready). */
export function isUnknownModelError(err: unknown): boolean {
  if (err instanceof TritonHttpError) return /unknown model|not found/i.test(err.tritonMessage);
  if (err instanceof TritonGrpcError)
    return err.codeName === "NOT_FOUND" || /unknown model|not found/i.test(err.details);
  return false;
}

export function isUnreachableError(err: unknown): boolean {
  return (
    err instanceof TritonUnreachableError ||
    (err instanceof TritonGrpcError && (err.codeName === "UNAVAILABLE" || err.codeName === "DEADLINE_EXCEEDED"))
  );
}

export class HttpControl implements ControlClient {
  readonly protocol = "http" as const;
  constructor(readonly client: TritonHttpClient) {}

  get endpoint(): string {
    return this.client.baseUrl;
  }

  isLive(): Promise<boolean> {
    return this.client.isLive();
  }

  isModelReady(model: string, version?: string): Promise<boolean> {
    return this.client.isModelReady(model, version);
  }

  modelMetadata(model: string, version?: string): Promise<ModelMetadata> {
    return this.client.modelMetadata(model, version);
  }

  async modelConfig(model: string, version?: string): Promise<ModelConfigSummary> {
    const c = (await this.client.modelConfig(model, version)) as Partial<ModelConfigSummary> & {
      model_transaction_policy?: { decoupled?: boolean };
      sequence_batching?: { max_sequence_idle_microseconds?: number | string; iterative_sequence?: boolean };
    };
    return {
      name: c.name ?? model,
      platform: c.platform ?? "",
      backend: c.backend ?? "",
      max_batch_size: Number(c.max_batch_size ?? 0),
      ...(c.dynamic_batching
        ? {
            dynamic_batching: {
              preferred_batch_size: (c.dynamic_batching.preferred_batch_size ?? []).map(Number),
              max_queue_delay_microseconds: Number(c.dynamic_batching.max_queue_delay_microseconds ?? 0),
            },
          }
        : {}),
      instance_group: (c.instance_group ?? []).map((g) => ({
        count: Number(g.count ?? 1),
        kind: String(g.kind ?? "KIND_AUTO"),
      })),
      input: (c.input ?? []).map((i) => ({ name: String(i.name), optional: Boolean(i.optional) })),
      ...(c.ensemble_scheduling
        ? {
            ensemble_scheduling: {
              step: (c.ensemble_scheduling.step ?? []).map((s) => ({ model_name: s.model_name })),
            },
          }
        : {}),
      ...(c.model_transaction_policy?.decoupled ? { decoupled: true } : {}),
      ...(c.sequence_batching
        ? {
            sequence_batching: {
              max_sequence_idle_microseconds: Number(c.sequence_batching.max_sequence_idle_microseconds ?? 0),
              ...(c.sequence_batching.iterative_sequence ? { iterative_sequence: true } : {}),
            },
          }
        : {}),
    };
  }

  async modelStatistics(model?: string, version?: string): Promise<StatisticsJson> {
    return (await this.client.modelStatistics(model, version)) as unknown as StatisticsJson;
  }

  close(): void {}
}

export class GrpcControl implements ControlClient {
  readonly protocol = "grpc" as const;
  constructor(readonly client: TritonGrpcClient) {}

  get endpoint(): string {
    return this.client.address;
  }

  isLive(): Promise<boolean> {
    return this.client.isLive();
  }

  isModelReady(model: string, version?: string): Promise<boolean> {
    return this.client.isModelReady(model, version);
  }

  modelMetadata(model: string, version?: string): Promise<ModelMetadata> {
    return this.client.modelMetadata(model, version);
  }

  modelConfig(model: string, version?: string): Promise<ModelConfigSummary> {
    return this.client.modelConfig(model, version);
  }

  modelStatistics(model?: string, version?: string): Promise<StatisticsJson> {
    return this.client.modelStatistics(model, version);
  }

  close(): void {
    this.client.close();
  }
}
