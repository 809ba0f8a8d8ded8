/**
 * What the ensemble checks share: an ensemble config's steps, where a step's fields are in the
 * config (the places findings point to), the repository's models as the checks see them, and the
 * cycle search both the tensors' graph and the ensembles' graph use.
 */
import { ENSEMBLE_PLATFORM } from "../../backends.js";
import type { ModelConfig, ModelEnsembling_Step } from "../../gen/model_config_pb.js";
import type { ModelLayout } from "../../layout.js";
import type { ParsedConfig } from "../../parse.js";
import { quoteList } from "../../suggest.js";
import type { Reporter } from "../reporter.js";

/** What the ensemble rules know of each model in the repository. */
export interface RepoModel {
  name: string;
  layout: ModelLayout;
  parsed?: ParsedConfig;
  /** Errors found in it so far: a model with errors will not load, nor will an ensemble running it. */
  errorCount: number;
}

export function isEnsemble(c: ModelConfig): boolean {
  return c.platform === ENSEMBLE_PLATFORM || c.schedulingChoice.case === "ensembleScheduling";
}

export function ensembleSteps(c: ModelConfig): ModelEnsembling_Step[] {
  return c.schedulingChoice.case === "ensembleScheduling" ? c.schedulingChoice.value.step : [];
}

export const stepPath = (s: number) => `ensemble_scheduling.step[${s}]`;
export const entryPath = (s: number, map: "input_map" | "output_map", key: string) => `${stepPath(s)}.${map}{${key}}`;

/** A "did you mean" for a name among candidates, else the candidates themselves when they are few. */
export function hintFor(r: Reporter, name: string, candidates: Iterable<string>, what: string): string {
  const list = [...candidates];
  const near = r.suggest(name, list);
  if (near) return `Did you mean '${near}'?`;
  if (list.length === 0) return `It declares no ${what}s.`;
  return list.length <= 8 ? `Its ${what}s are ${quoteList(list)}.` : `Check the ${what} names.`;
}

/**
 * Cycles found by depth-first search, each reported once, starting at its smallest member. The
 * search keeps its own stack: an ensemble of thousands of chained steps must not exhaust the
 * call stack.
 */
export function findCycles(nodes: Iterable<string>, edges: (n: string) => Iterable<string>): string[][] {
  const state = new Map<string, 1 | 2>();
  const path: string[] = [];
  const frames: Array<Iterator<string>> = [];
  const cycles: string[][] = [];
  const keys = new Set<string>();
  const enter = (n: string): void => {
    state.set(n, 1);
    path.push(n);
    frames.push(edges(n)[Symbol.iterator]());
  };
  for (const start of [...nodes].sort()) {
    if (state.has(start)) continue;
    enter(start);
    while (frames.length) {
      const step = frames[frames.length - 1]!.next();
      if (step.done) {
        frames.pop();
        state.set(path.pop()!, 2);
        continue;
      }
      const m = step.value;
      const st = state.get(m);
      if (st === 1) {
        const cyc = path.slice(path.lastIndexOf(m));
        const min = cyc.reduce((a, b) => (b < a ? b : a));
        const k = cyc.indexOf(min);
        const norm = [...cyc.slice(k), ...cyc.slice(0, k)];
        const key = norm.join("\u0000");
        if (!keys.has(key)) {
          keys.add(key);
          cycles.push(norm);
        }
      } else if (st === undefined) {
        enter(m);
      }
    }
  }
  return cycles.sort((x, y) => (x.join("\u0000") < y.join("\u0000") ? -1 : 1));
}
