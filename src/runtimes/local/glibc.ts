import { UserError } from "../../errors.js";

export const MIN_GLIBC = "2.35";

/** The running glibc version as Node sees it, or undefined on a non-glibc system (musl, macOS). */
export function glibcVersion(report: () => unknown = () => process.report?.getReport()): string | undefined {
  const r = report() as { header?: { glibcVersionRuntime?: string } } | undefined;
  return r?.header?.glibcVersionRuntime;
}

export function compareVersions(a: string, b: string): number {
  const pa = a.split(".").map(Number);
  const pb = b.split(".").map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

export function checkGlibc(version: string | undefined, platform: NodeJS.Platform = process.platform): string {
  if (platform !== "linux") {
    throw new UserError(`the local runtime runs Triton's Linux binaries; this is ${platform}`, {
      hint: "Use `--runtime docker` (Docker Desktop) or run triton-dev on Linux.",
    });
  }
  if (!version) {
    throw new UserError("the local runtime needs glibc; this Linux has none (musl?)", {
      hint: `Use \`--runtime docker\`, or a glibc-based distribution with glibc >= ${MIN_GLIBC} (Ubuntu 22.04+, Debian 12+).`,
    });
  }
  if (compareVersions(version, MIN_GLIBC) < 0) {
    throw new UserError(`glibc ${version} is too old for Triton's binaries (needs >= ${MIN_GLIBC})`, {
      hint: "Use `--runtime docker`, or upgrade to Ubuntu 22.04+ / Debian 12+.",
    });
  }
  return version;
}
