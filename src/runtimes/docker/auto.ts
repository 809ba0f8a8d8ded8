import { connectDocker, daemonFacts } from "./client.js";
import { DEFAULT_IMAGE } from "./settings.js";

export interface AutoProbe {
  answers: boolean;
  version?: string;
  nvidia?: boolean;
  imagePresent?: boolean;
  image: string;
}

/** What `--runtime auto` needs to know of the Docker daemon, within a short deadline. */
export async function probeForAuto(
  image: string | undefined,
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<AutoProbe> {
  const ref = image ?? DEFAULT_IMAGE;
  try {
    const docker = connectDocker(env);
    const facts = await Promise.race([
      daemonFacts(docker),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error("timeout")), timeoutMs).unref()),
    ]);
    const imagePresent = await docker
      .getImage(ref)
      .inspect()
      .then(
        () => true,
        () => false,
      );
    return { answers: true, version: facts.version, nvidia: facts.nvidia, imagePresent, image: ref };
  } catch {
    return { answers: false, image: ref };
  }
}
