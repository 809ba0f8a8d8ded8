// The resolve hook of register.mjs where module.registerHooks is missing (it runs off-thread).
import fs from "node:fs";

let out;

export function initialize(data) {
  out = data.out;
}

export async function resolve(specifier, context, nextResolve) {
  const r = await nextResolve(specifier, context);
  fs.appendFileSync(out, `${r.url}\n`);
  return r;
}
