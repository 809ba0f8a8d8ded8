// What the benches that run a runtime beside the local one share (cluster.mjs, kind.mjs): named
// steps whose failure says what the run looked like, the offset model's save-to-served timings,
// and the table's ratio rows.
import fsp from "node:fs/promises";
import path from "node:path";
import { fmt } from "./lib.mjs";

export const secs = (ms) => ms / 1000;
export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
export const lastLines = (text, n = 15) => text.trim().split("\n").slice(-n).join("\n");
export const log = (msg) => console.error(`bench: ${msg}`);

export class StepError extends Error {}

/**
 * A step runner: `step(name, fn, side)` runs one named step; a failure carries the step's name and,
 * for a side's step, what `diagnose(side)` finds the run saying about itself then.
 */
export function stepper(diagnose) {
  return async function step(name, fn, side) {
    log(`${name} ...`);
    try {
      return await fn();
    } catch (err) {
      if (err instanceof StepError) throw err;
      const seen = side ? await diagnose(side).catch((e) => `(no diagnosis: ${e.message})`) : "";
      throw new StepError(`${name}: ${err instanceof Error ? err.message : String(err)}${seen}`, { cause: err });
    }
  };
}

/**
 * The offset model (version 1 adds K) added to a side's models, then `count` saves of a new K, each
 * timed to served. `offset` holds test/helpers/offset-model.ts's exports.
 */
export async function offsetEdits(side, { offset, step, count }) {
  const file = path.join(side.models, "offset", "1", "model.py");
  const newModel = await step(
    `${side.name}: new model saved to served`,
    async () => {
      const t0 = Date.now();
      await offset.writeOffsetModel(side.models, "1");
      await offset.untilOffsetServes(side.ports.http, 1, "new model", 120_000);
      return secs(Date.now() - t0);
    },
    side,
  );
  const times = [];
  for (let i = 0; i < count; i++) {
    const k = i + 2;
    times.push(
      await step(
        `${side.name}: edit ${i + 1}/${count} (x + ${k}) saved to served`,
        async () => {
          const t0 = Date.now();
          await fsp.writeFile(file, offset.OFFSET_MODEL.replace("x + 1.0", `x + ${k}.0`));
          await offset.untilOffsetServes(side.ports.http, k, `edit ${i + 1}`, 120_000);
          return secs(Date.now() - t0);
        },
        side,
      ),
    );
  }
  log(`${side.name}: new model ${fmt(newModel)} s, edits ${times.map((t) => fmt(t)).join(", ")} s`);
  return { newModel, edits: times };
}

/** The other runtime's figure over the local one's, or "-" when either is missing. */
export const ratio = (other, local) =>
  other !== undefined && local !== undefined && local > 0 ? fmt(other / local, 2) : "-";
/** A table row: label, the local figure, the other runtime's, and their ratio. */
export const row = (label, local, other, d = 1) => [label, fmt(local, d), fmt(other, d), ratio(other, local)];
