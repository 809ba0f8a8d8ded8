import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { TritonDevError } from "../errors.js";

export type Labels = Record<string, string>;

export interface Sample {
  name: string;
  labels: Labels;
  value: number;
}

/** One labelled child of a summary family: its quantiles, sum and count, put back together. */
export interface SummarySample {
  name: string;
  labels: Labels;
  count: number;
  sum: number;
  /** Keyed by the quantile label as written ("0.99"); NaN when the window held no observation. */
  quantiles: Record<string, number>;
}

export interface Exposition {
  /** Counters, gauges and untyped samples (summary parts are in `summaries`). */
  samples: Sample[];
  summaries: SummarySample[];
}

export class MetricsParseError extends TritonDevError {
  override name = "MetricsParseError";
}

/** The text format writes NaN and infinities its own way ("Nan" from Triton, "+Inf"). */
export function parseValue(text: string | undefined): number {
  if (text === undefined) return NaN;
  const t = text.trim();
  if (/^[+]?inf$/i.test(t)) return Infinity;
  if (/^-inf$/i.test(t)) return -Infinity;
  if (/^nan$/i.test(t)) return NaN;
  return t === "" ? NaN : Number(t);
}

const labelKey = (labels: Labels, without?: string) =>
  JSON.stringify(
    Object.keys(labels)
      .filter((k) => k !== without)
      .sort()
      .map((k) => [k, labels[k]]),
  );

/**
 * Prometheus text exposition format to flat samples plus reassembled summaries.
 *
 * parse-prometheus-text-format tokenises lines, labels and escapes correctly, but folds every
 * child of a summary or histogram into one object and drops their labels (upstream issue 13),
 * and Triton labels each summary by model and version. So those families are declared untyped
 * before parsing, which keeps every line as its own labelled sample, and are regrouped here.
 */
export function parseExposition(text: string): Exposition {
  const grouped = new Map<string, "summary" | "histogram">();
  const retyped = text.replace(
    /^# TYPE (\S+) (summary|histogram)[ \t]*$/gm,
    (_line, name: string, type: "summary" | "histogram") => {
      grouped.set(name, type);
      return `# TYPE ${name} untyped`;
    },
  );
  let families: ReturnType<typeof parsePrometheusTextFormat>;
  try {
    // The parser drops the last sample of a text that does not end in a newline.
    families = parsePrometheusTextFormat(retyped.endsWith("\n") ? retyped : retyped + "\n");
  } catch (err) {
    throw new MetricsParseError(
      `the metrics endpoint answered text that is not Prometheus' format: ${(err as Error).message}`,
      { cause: err },
    );
  }

  const samples: Sample[] = [];
  const summaries = new Map<string, SummarySample>();
  const summaryOf = (name: string, labels: Labels): SummarySample => {
    const key = `${name}\u0000${labelKey(labels, "quantile")}`;
    let s = summaries.get(key);
    if (!s) {
      const own: Labels = { ...labels };
      delete own.quantile;
      s = { name, labels: own, count: NaN, sum: NaN, quantiles: {} };
      summaries.set(key, s);
    }
    return s;
  };

  for (const f of families) {
    let base = f.name;
    let part: "value" | "count" | "sum" = "value";
    const suffixed = /^(.*)_(count|sum)$/.exec(f.name);
    if (grouped.get(f.name) !== "summary" && suffixed && grouped.get(suffixed[1]!) === "summary") {
      base = suffixed[1]!;
      part = suffixed[2] as "count" | "sum";
    }
    const isSummary = grouped.get(base) === "summary";
    for (const m of f.metrics) {
      const labels = m.labels ?? {};
      const value = parseValue(m.value);
      if (isSummary) {
        const s = summaryOf(base, labels);
        if (part === "count") s.count = value;
        else if (part === "sum") s.sum = value;
        else if (labels.quantile !== undefined) s.quantiles[labels.quantile] = value;
        continue;
      }
      samples.push({ name: f.name, labels, value });
    }
  }
  return { samples, summaries: [...summaries.values()] };
}
