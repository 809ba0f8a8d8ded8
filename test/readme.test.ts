import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./helpers/cli.js";

const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as {
  name: string;
  bin: Record<string, string>;
  files: string[];
};

describe("the README's first steps", () => {
  it("shows the port flags in the first example, with the ports the text says it serves", () => {
    const first = /```sh\n([\s\S]*?)```/.exec(readme)![1]!;
    const up = first
      .replace(/\\\n\s*/g, " ")
      .split("\n")
      .find((l) => / up /.test(l))!;
    expect(up).toMatch(/--http-port 8000 --grpc-port 8001 --metrics-port 8002/);
    expect(readme).toMatch(/serves it on `127\.0\.0\.1:8000` \(HTTP\), `:8001` \(gRPC\) and `:8002`/);
  });

  it("says how to put triton-dev on PATH, as package.json packs and names it", () => {
    expect(pkg.bin["triton-dev"]).toBe("dist/cli/main.js");
    expect(readme).toMatch(/npm link/);
    expect(readme).toContain(`npm install -g ./${pkg.name}-*.tgz`);
    // What the README says the tarball holds is what `files` packs.
    const listed = /writes triton-dev-<version>\.tgz \(([^)]*)\)/.exec(readme)![1]!.split(/,\s*/);
    expect(listed).toEqual(pkg.files);
  });

  it("says a model's working directory is not its folder but the run's", () => {
    const flat = readme.replace(/\s+/g, " ");
    expect(flat).toContain("A model's working directory is not its folder");
    // The local runtime starts tritonserver in the run's folder (runtimes/local/local-runtime.ts).
    expect(flat).toContain("under the local runtime is the run's folder (`<state>/runs/<id>`");
  });
});
