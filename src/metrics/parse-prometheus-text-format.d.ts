// The package ships no types; this is the shape its parser returns (dist/*.cjs.js).
declare module "parse-prometheus-text-format" {
  interface ParsedSample {
    value?: string;
    labels?: Record<string, string>;
    count?: string;
    sum?: string;
    quantiles?: Record<string, string>;
    buckets?: Record<string, string>;
  }
  interface ParsedFamily {
    name: string;
    help: string;
    type: "COUNTER" | "GAUGE" | "SUMMARY" | "HISTOGRAM" | "UNTYPED";
    metrics: ParsedSample[];
  }
  function parsePrometheusTextFormat(text: string): ParsedFamily[];
  export = parsePrometheusTextFormat;
}
