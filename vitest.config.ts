import fs from "node:fs";
import { configDefaults, defineConfig } from "vitest/config";
import FixturesLastSequencer from "./test/helpers/fixtures-last-sequencer.js";

/*
 * Two projects, told apart by file name alone (there is no list to keep up to date):
 *
 *   integration: test/integration/** and any file named *.integration.test.ts(x) under test/, next
 *                to the unit tests of the same src/ folder (e.g. test/perf/perf-live.integration.test.ts).
 *   unit:        every other *.test.ts(x) under test/.
 *
 * A unit test is quick and needs nothing beyond Node and the sources. A test is an integration test
 * when it needs the built CLI (dist/, `npm run build`), a tritonserver, a Docker daemon or
 * container, a Go build, tmux, or the managed Triton environment that `triton-dev setup` installs
 * (the globalSetup below), or when it is slow by design: the parser and lint fuzzing
 * (test/repo/parse-fuzz.integration.test.ts, megabyte configs included) takes about 25 s of CPU,
 * as much as all the unit tests together. Unit tests run straight from src/, files in parallel,
 * with no global setup; a unit test that turns out to need one of those things moves to a
 * *.integration.test.ts file (split the file if only part of it does), rather than getting the
 * setup back.
 *
 *   npm run test:unit          vitest run --project unit
 *   npm run test:integration   build, then vitest run --project integration
 *   npm test                   build, then both (unit first, then integration)
 */
const INTEGRATION = ["test/integration/**/*.test.{ts,tsx}", "test/**/*.integration.test.{ts,tsx}"];

/*
 * The unit tests' temporary folders (os.tmpdir()) on a RAM filesystem where the machine has one and
 * TMPDIR does not say otherwise: they make and remove thousands of small files and folders
 * (temporary model repositories), which on a virtual machine's ext4 disk cost about a fifth of the suite's CPU
 * time (a mkdir or a small write about 0.5 ms of system time, against 0.02 ms on tmpfs).
 */
function unitTmpdir(): { TMPDIR?: string } {
  if (process.env.TMPDIR) return {};
  try {
    fs.accessSync("/dev/shm", fs.constants.W_OK);
    return { TMPDIR: "/dev/shm" };
  } catch {
    return {};
  }
}

export default defineConfig({
  test: {
    // Transformed modules are kept on disk (node_modules/.experimental-vitest-cache), keyed by
    // content: a rerun transforms only what changed, about 3 s less CPU for the unit suite here.
    experimental: { fsModuleCache: true },
    testTimeout: 30_000,
    hookTimeout: 240_000,
    // The files on the Kubernetes fixtures last: CI builds those while the others run.
    sequence: { sequencer: FixturesLastSequencer },
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: ["test/**/*.test.{ts,tsx}"],
          exclude: [...configDefaults.exclude, ...INTEGRATION],
          // One worker per core (vitest's default leaves one core free: no parallelism at all on 2 cores).
          maxWorkers: "100%",
          // Files of a worker share their modules, which halves the CPU time here. Unit tests inject
          // what they replace (no vi.mock, no process.env changes), so nothing leaks between files.
          isolate: false,
          sequence: { groupOrder: 0 },
          env: {
            // No managed Triton environment and no Docker daemon for unit tests: a test that
            // reaches for either fails at once (this path cannot be created, even by root) or sees
            // no daemon, instead of quietly installing the environment or using the machine's.
            TRITON_DEV_HOME: "/dev/null/triton-dev-home",
            DOCKER_HOST: "unix:///dev/null/docker.sock",
            ...unitTmpdir(),
          },
        },
      },
      {
        extends: true,
        test: {
          name: "integration",
          include: INTEGRATION,
          globalSetup: ["test/helpers/global-setup.ts"],
          // Integration files start real tritonservers; on a 2-core machine they run one at a time.
          fileParallelism: false,
          // After the unit project, never alongside it: the servers' timings need the machine.
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
