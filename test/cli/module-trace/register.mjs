// `node --import ./register.mjs ...`: appends the URL of every module the process resolves (ESM
// and CommonJS) to the file $TRITON_DEV_MODULE_TRACE, one per line, so a test can tell what a
// command loaded without timing it.
import fs from "node:fs";
import module from "node:module";

const out = process.env.TRITON_DEV_MODULE_TRACE;
if (!out) throw new Error("register.mjs: set TRITON_DEV_MODULE_TRACE to the file to write");

if (typeof module.registerHooks === "function") {
  // Node >= 22.15: in-thread hooks, which also see require().
  module.registerHooks({
    resolve(specifier, context, nextResolve) {
      const r = nextResolve(specifier, context);
      fs.appendFileSync(out, `${r.url}\n`);
      return r;
    },
  });
} else {
  // Node 20: off-thread hooks see import only; CommonJS modules are read from require's cache at exit.
  module.register("./hooks.mjs", import.meta.url, { data: { out } });
  const require = module.createRequire(import.meta.url);
  process.on("exit", () => {
    const cjs = Object.keys(require.cache).map((f) => `file://${f}\n`);
    fs.appendFileSync(out, cjs.join(""));
  });
}
