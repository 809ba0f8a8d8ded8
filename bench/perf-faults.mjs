#!/usr/bin/env node
// perf against broken servers: for each of our clients (HTTP control, HTTP inference, generate_stream,
// gRPC control, gRPC inference, the raw HTTP/2 stream) and each fault the fault server plays
// (test/fixtures/fault-server), `triton-dev perf -u 127.0.0.1:PORT` is run as a whole process and
// its exit status, wall time, peak memory (VmHWM, sampled every 50 ms) and first error line are
// printed; beside them, perf against the same server with no fault (the baseline's peak memory).
//
//   npm run build && node bench/perf-faults.mjs [--clients http-control,grpc-stream] [--faults endless,huge]
//     [--vs OTHER/dist/cli/main.js] [--out FILE.json]
//
// --vs runs another build's CLI (e.g. main before the change, built in a temporary folder) on the
// same cases, for its figures beside ours. Starts no Triton; nothing leaves 127.0.0.1.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { CLIENTS, FAULTS, perfArgs, runCliSampled, startFaultServer } from "../test/fixtures/fault-server/harness.mjs";

const args = process.argv.slice(2);
const flag = (name, def) => (args.includes(name) ? args[args.indexOf(name) + 1] : def);
const only = (name, all, key) => {
  const v = flag(name, undefined);
  return v ? all.filter((x) => v.split(",").includes(key(x))) : all;
};
const clients = only("--clients", CLIENTS, (c) => c.id);
const faults = only("--faults", FAULTS, (f) => f);
const OUT = flag("--out", undefined);
const VS = flag("--vs", undefined) && path.resolve(flag("--vs"));

const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "triton-dev-faults-"));
const env = { ...process.env, TRITON_DEV_STATE_DIR: stateDir, CI: "1" };
const builds = [{ name: "this build", cli: undefined }, ...(VS ? [{ name: "--vs", cli: VS }] : [])];

async function one(client, fault, cli) {
  // `frames` spoils every connection to the port, so it is played once per protocol.
  const server = await startFaultServer({
    protocol: client.protocol,
    fault,
    on: client.on,
    decoupled: !!client.decoupled,
  });
  try {
    const r = await runCliSampled(perfArgs(server.port, client.protocol), env, 150_000, cli);
    const line = (
      r.stderr.split("\n").find((l) => /^(error|internal error):/.test(l)) ??
      r.stderr.split("\n")[0] ??
      ""
    ).slice(0, 200);
    return {
      client: client.id,
      fault,
      code: r.timedOut ? "killed" : r.code,
      wallS: r.wallMs / 1000,
      peakMb: r.peakMb,
      line,
    };
  } finally {
    await server.stop();
  }
}

const rows = [];
for (const b of builds) {
  for (const client of clients) {
    for (const fault of ["none", ...faults]) {
      if (fault === "frames" && !client.id.endsWith("-control")) continue;
      const r = { build: b.name, ...(await one(client, fault, b.cli)) };
      rows.push(r);
      console.log(
        `${b.name.padEnd(10)} ${r.client.padEnd(15)} ${r.fault.padEnd(9)} exit ${String(r.code).padEnd(6)} ${r.wallS.toFixed(1).padStart(5)} s  peak ${r.peakMb.toFixed(0).padStart(5)} MB  ${r.line}`,
      );
    }
  }
}
const worst = Math.max(...rows.filter((r) => r.build === "this build").map((r) => r.peakMb));
const base = Math.max(...rows.filter((r) => r.build === "this build" && r.fault === "none").map((r) => r.peakMb));
console.log(
  `\nthis build: highest peak ${worst.toFixed(0)} MB against a fault, ${base.toFixed(0)} MB against a working server`,
);
if (OUT) fs.writeFileSync(OUT, JSON.stringify(rows, null, 2));
fs.rmSync(stateDir, { recursive: true, force: true });
