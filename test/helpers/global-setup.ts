import { execFileSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * The integration tests need the managed Triton environment. Install it (idempotent, fast when
 * present) through the built CLI, exactly as a user's `triton-dev setup` would.
 */
export default function setup(): void {
  execFileSync(process.execPath, [path.join(root, "dist/cli/main.js"), "setup"], {
    stdio: "inherit",
    env: process.env,
  });
}
