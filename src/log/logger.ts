/**
 * One namespaced logger for the whole tool. Level from TRITON_DEV_LOG
 * (error|warn|info|debug|trace, default warn). Diagnostics go to stderr so
 * that stdout stays clean for --json output.
 */
export type LogLevel = "silent" | "error" | "warn" | "info" | "debug" | "trace";

const ORDER: Record<LogLevel, number> = { silent: 0, error: 1, warn: 2, info: 3, debug: 4, trace: 5 };

export interface Logger {
  error(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  debug(msg: string, fields?: Record<string, unknown>): void;
  trace(msg: string, fields?: Record<string, unknown>): void;
  child(namespace: string): Logger;
  enabled(level: LogLevel): boolean;
}

export interface LoggerOptions {
  env?: NodeJS.ProcessEnv;
  write?: (line: string) => void;
  clock?: () => Date;
}

export function parseLevel(value: string | undefined): LogLevel {
  const v = (value ?? "").trim().toLowerCase();
  return v in ORDER ? (v as LogLevel) : "warn";
}

export function createLogger(namespace = "triton-dev", options: LoggerOptions = {}): Logger {
  const env = options.env ?? process.env;
  const write = options.write ?? ((line: string) => process.stderr.write(line + "\n"));
  const clock = options.clock ?? (() => new Date());
  const level = parseLevel(env.TRITON_DEV_LOG);
  const make = (ns: string): Logger => {
    const emit = (lvl: LogLevel) => (msg: string, fields?: Record<string, unknown>) => {
      if (ORDER[lvl] > ORDER[level]) return;
      const extra = fields && Object.keys(fields).length ? " " + JSON.stringify(fields) : "";
      write(`${clock().toISOString()} ${lvl.toUpperCase().padEnd(5)} ${ns}: ${msg}${extra}`);
    };
    return {
      error: emit("error"),
      warn: emit("warn"),
      info: emit("info"),
      debug: emit("debug"),
      trace: emit("trace"),
      child: (sub: string) => make(`${ns}:${sub}`),
      enabled: (l: LogLevel) => ORDER[l] <= ORDER[level],
    };
  };
  return make(namespace);
}

/** The process-wide root logger; modules take `log.child("name")`. */
export const log: Logger = createLogger();
