import { ServerResponseError, UserError, type ServerExchange } from "../errors.js";
import { fetchBounded, fetchStatus, JSON_RESPONSE_LIMIT } from "../net/bounded-fetch.js";
import { urlHost } from "../net/url.js";

/** States from Triton's repository index (POST /v2/repository/index). */
export type ModelState = "UNKNOWN" | "READY" | "UNAVAILABLE" | "LOADING" | "UNLOADING";

export interface RepositoryIndexEntry {
  name: string;
  version?: string;
  state?: ModelState;
  reason?: string;
}

export interface TensorMetadata {
  name: string;
  datatype: string;
  shape: number[];
}

export interface ModelMetadata {
  name: string;
  versions?: string[];
  platform: string;
  inputs: TensorMetadata[];
  outputs: TensorMetadata[];
}

export interface InferInput {
  name: string;
  shape: number[];
  datatype: string;
  data: unknown[];
}

export interface InferOutput {
  name: string;
  shape: number[];
  datatype: string;
  data: unknown[];
}

export interface InferResponse {
  model_name: string;
  model_version: string;
  id?: string;
  outputs: InferOutput[];
}

/**
 * Triton answered with an error body ({"error": "..."}) or a non-2xx status: a user-facing error
 * (the server's word on what the user asked), never a crash.
 */
export class TritonHttpError extends UserError {
  override name = "TritonHttpError";
  constructor(
    readonly status: number,
    readonly tritonMessage: string,
    readonly url: string,
  ) {
    super(`Triton answered ${status} for ${url}: ${tritonMessage}`);
  }
}

/** Triton could not be reached, or the exchange did not complete (refused, reset, cut off, timeout). */
export { ServerConnectionError as TritonUnreachableError } from "../errors.js";

export interface TritonHttpClientOptions {
  /** Header name and value that unlock the restricted APIs (server-args.ts RESTRICTED_APIS). */
  repositoryKey?: { header: string; value: string };
  fetch?: typeof fetch;
  timeoutMs?: number;
}

/**
 * Triton's shutdown waits (up to --exit-timeout-secs) for open HTTP connections, and fetch keeps
 * idle ones for seconds: clients that talk to Triton now and then (the dashboard's polls, a stop's
 * look at what is loaded) close theirs instead.
 */
export const closingFetch: typeof fetch = (input, init) => {
  const headers = new Headers(init?.headers);
  headers.set("connection", "close");
  return fetch(input, { ...init, headers });
};

/** The header that carries the key unlocking a run's restricted APIs (the key itself is per run). */
export const REPOSITORY_KEY_HEADER = "triton-dev-key";

/**
 * A client for a run's server from its record: the HTTP endpoint and the repository key. Its
 * requests close their connection: Triton's exit waits for every open HTTP connection, and a
 * pooled keep-alive one (fetch keeps them 4 s) held every stop that followed a request by that
 * long. A control request costs one more local connect, which nobody can see.
 */
export function clientForRun(
  run: {
    host: string;
    ports: { http: number };
    repositoryKey: { header: string; value: string };
  },
  options: Omit<TritonHttpClientOptions, "repositoryKey"> = {},
): TritonHttpClient {
  return new TritonHttpClient(`http://${urlHost(run.host)}:${run.ports.http}`, {
    fetch: closingFetch,
    ...options,
    repositoryKey: run.repositoryKey,
  });
}

/** The KServe v2 HTTP API of one Triton server, plus Triton's repository and statistics extensions. */
/** `/v2/models/NAME`, or `/v2/models/NAME/versions/V` for one version (else the server's choice). */
export function modelPath(model: string, version?: string): string {
  return `/v2/models/${encodeURIComponent(model)}${version ? `/versions/${encodeURIComponent(version)}` : ""}`;
}

const ok = (status: number) => status >= 200 && status < 300;

export class TritonHttpClient {
  readonly baseUrl: string;
  private readonly fetchImpl: typeof fetch;
  private readonly timeoutMs: number;
  private readonly repositoryKey: TritonHttpClientOptions["repositoryKey"];

  constructor(baseUrl: string, options: TritonHttpClientOptions = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.fetchImpl = options.fetch ?? fetch;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.repositoryKey = options.repositoryKey;
  }

  private exchange(method: "GET" | "POST", path: string, expected: string): ServerExchange {
    return { server: `Triton at ${this.baseUrl}`, request: `${method} ${path}`, expected };
  }

  /** The status of a bodiless probe (health, readiness); its body, whatever it is, is not read. */
  private status(path: string, expected: string): Promise<number> {
    return fetchStatus(
      this.baseUrl + path,
      { method: "GET" },
      {
        exchange: this.exchange("GET", path, expected),
        timeoutMs: this.timeoutMs,
        fetch: this.fetchImpl,
      },
    );
  }

  /**
   * One JSON exchange: the answer bounded in size (JSON_RESPONSE_LIMIT) and, with its body, in
   * time; a 2xx answer that is not JSON is the server's fault, said as such.
   */
  private async json<T>(
    method: "GET" | "POST",
    path: string,
    expected: string,
    body?: unknown,
    extraHeaders: Record<string, string> = {},
  ): Promise<T> {
    const exchange = this.exchange(method, path, expected);
    const res = await fetchBounded(
      this.baseUrl + path,
      {
        method,
        headers: body === undefined ? extraHeaders : { "content-type": "application/json", ...extraHeaders },
        body: body === undefined ? undefined : JSON.stringify(body),
      },
      { exchange, timeoutMs: this.timeoutMs, maxBytes: JSON_RESPONSE_LIMIT, fetch: this.fetchImpl },
    );
    const text = res.body.toString("utf8");
    let parsed: unknown;
    let bad: string | undefined;
    try {
      parsed = text.length ? JSON.parse(text) : undefined;
    } catch (err) {
      bad = (err as Error).message;
    }
    if (!res.ok) {
      const msg = (parsed as { error?: string } | undefined)?.error ?? (text.slice(0, 500) || res.statusText);
      throw new TritonHttpError(res.status, msg, this.baseUrl + path);
    }
    if (bad !== undefined || (text.length > 0 && (parsed === null || typeof parsed !== "object")))
      throw new ServerResponseError(
        exchange,
        `answered ${res.status} with a body that is not a JSON object (${bad ?? JSON.stringify(text.slice(0, 40))})`,
      );
    return parsed as T;
  }

  private repoHeaders(): Record<string, string> {
    return this.repositoryKey ? { [this.repositoryKey.header]: this.repositoryKey.value } : {};
  }

  /** 200 from /v2/health/live; false when Triton answers otherwise or cannot be reached. */
  async isLive(): Promise<boolean> {
    try {
      return ok(await this.status("/v2/health/live", "200 when the server is live"));
    } catch {
      return false;
    }
  }

  async isReady(): Promise<boolean> {
    try {
      return ok(await this.status("/v2/health/ready", "200 when the server is ready"));
    } catch {
      return false;
    }
  }

  async isModelReady(model: string, version?: string): Promise<boolean> {
    const p = `${modelPath(model, version)}/ready`;
    try {
      return ok(await this.status(p, "200 when the model is ready"));
    } catch {
      return false;
    }
  }

  serverMetadata(): Promise<{ name: string; version: string; extensions: string[] }> {
    return this.json("GET", "/v2", "the server's metadata as JSON");
  }

  repositoryIndex(readyOnly = false): Promise<RepositoryIndexEntry[]> {
    return this.json(
      "POST",
      "/v2/repository/index",
      "the repository index as JSON",
      { ready: readyOnly },
      this.repoHeaders(),
    );
  }

  async loadModel(model: string, parameters?: Record<string, string>): Promise<void> {
    await this.json(
      "POST",
      `/v2/repository/models/${encodeURIComponent(model)}/load`,
      "the load's outcome",
      parameters ? { parameters } : {},
      this.repoHeaders(),
    );
  }

  async unloadModel(model: string, unloadDependents = false): Promise<void> {
    await this.json(
      "POST",
      `/v2/repository/models/${encodeURIComponent(model)}/unload`,
      "the unload's outcome",
      { parameters: { unload_dependents: unloadDependents } },
      this.repoHeaders(),
    );
  }

  modelMetadata(model: string, version?: string): Promise<ModelMetadata> {
    return this.json("GET", modelPath(model, version), "the model's metadata as JSON");
  }

  modelConfig(model: string, version?: string): Promise<Record<string, unknown>> {
    return this.json("GET", `${modelPath(model, version)}/config`, "the model's configuration as JSON");
  }

  modelStatistics(model?: string, version?: string): Promise<{ model_stats: Array<Record<string, unknown>> }> {
    return this.json(
      "GET",
      model ? `${modelPath(model, version)}/stats` : "/v2/models/stats",
      "inference statistics as JSON",
    );
  }

  infer(
    model: string,
    inputs: InferInput[],
    options: { id?: string; parameters?: Record<string, string | number | boolean> } = {},
  ): Promise<InferResponse> {
    return this.json("POST", `/v2/models/${encodeURIComponent(model)}/infer`, "an inference response as JSON", {
      ...(options.id ? { id: options.id } : {}),
      ...(options.parameters ? { parameters: options.parameters } : {}),
      inputs,
    });
  }
}
