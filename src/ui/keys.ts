import { UsageError } from "../errors.js";
import { formatShapeList, parseShapeList } from "../perf/inputs.js";
import { selectedModel, visibleLogs, visibleModels, type DashboardState, type UiState, type View } from "./state.js";

/** Ink's key flags, the subset the dashboard reads (so tests need no Ink). */
export interface KeyInfo {
  upArrow?: boolean;
  downArrow?: boolean;
  pageUp?: boolean;
  pageDown?: boolean;
  return?: boolean;
  escape?: boolean;
  backspace?: boolean;
  delete?: boolean;
  ctrl?: boolean;
  tab?: boolean;
}

/** Work the dashboard asks a controller to do; the store changes come back as events. */
export type Command =
  | { type: "quit" }
  | { type: "reload"; model: string }
  | { type: "perf"; model: string; shapes?: Record<string, number[]> }
  | { type: "cancel-perf" }
  | { type: "tune"; model: string }
  | { type: "cancel-tune" };

export interface KeyResult {
  state: DashboardState;
  command?: Command;
}

const ui = (s: DashboardState, patch: Partial<UiState>): DashboardState => ({ ...s, ui: { ...s.ui, ...patch } });

function toggleView(s: DashboardState, v: View): DashboardState {
  return ui(s, { view: s.ui.view === v ? "overview" : v, help: false, logScroll: 0 });
}

function move(s: DashboardState, delta: number): DashboardState {
  const vis = visibleModels(s);
  if (vis.length === 0) return s;
  const cur = vis.findIndex((m) => m.name === selectedModel(s)?.name);
  const next = vis[Math.max(0, Math.min(vis.length - 1, (cur < 0 ? 0 : cur) + delta))]!;
  return next.name === s.ui.selected ? s : ui(s, { selected: next.name });
}

function typing(s: DashboardState, input: string, key: KeyInfo): DashboardState {
  const target = s.ui.filtering!;
  const field = target === "models" ? "modelFilter" : "logFilter";
  const text = s.ui[field];
  if (key.escape) return ui(s, { filtering: undefined, [field]: "" });
  if (key.return) return ui(s, { filtering: undefined });
  if (key.backspace || key.delete) return ui(s, { [field]: text.slice(0, -1) });
  if (key.ctrl || key.upArrow || key.downArrow || key.tab) return s;
  // Printable characters only: a pasted escape sequence must not end up in the filter.
  const printable = input.replace(/[\u0000-\u001f\u007f]/g, "");
  return printable ? ui(s, { [field]: text + printable, logScroll: 0 }) : s;
}

/** The perf command for `model`, with the shapes remembered for it. */
function perfCommand(s: DashboardState, model: string): Command {
  const shapes = s.ui.shapes[model];
  return { type: "perf", model, ...(shapes && Object.keys(shapes).length ? { shapes } : {}) };
}

/** Opens the shapes prompt for `model`, holding what was given for it before. */
export function openShapesPrompt(s: DashboardState, model: string): DashboardState {
  return ui(s, { prompt: { model, text: formatShapeList(s.ui.shapes[model] ?? {}) }, view: "perf", help: false });
}

function prompting(s: DashboardState, input: string, key: KeyInfo): KeyResult {
  const p = s.ui.prompt!;
  if (key.escape) return { state: ui(s, { prompt: undefined }) };
  if (key.return) {
    let shapes: Record<string, number[]>;
    try {
      // The parser --shape uses, so the prompt accepts and refuses exactly what the flag does.
      shapes = parseShapeList(p.text);
    } catch (err) {
      if (!(err instanceof UsageError)) throw err;
      return { state: ui(s, { prompt: { ...p, error: err.message } }) };
    }
    const next = ui(s, { prompt: undefined, shapes: { ...s.ui.shapes, [p.model]: shapes } });
    if (next.perf.status === "running") return { state: next };
    return { state: next, command: perfCommand(next, p.model) };
  }
  const { error: _error, ...rest } = p;
  if (key.backspace || key.delete) return { state: ui(s, { prompt: { ...rest, text: p.text.slice(0, -1) } }) };
  if (key.ctrl || key.upArrow || key.downArrow || key.tab) return { state: s };
  const printable = input.replace(/[\u0000-\u001f\u007f]/g, "");
  return printable ? { state: ui(s, { prompt: { ...rest, text: p.text + printable } }) } : { state: s };
}

/**
 * The dashboard's keys, k9s-style. Pure: the state after the key, and any command for a
 * controller to carry out.
 */
export function handleKey(s: DashboardState, input: string, key: KeyInfo, pageLines = 10): KeyResult {
  if (key.ctrl && input === "c") return { state: s, command: { type: "quit" } };
  if (s.ui.filtering) return { state: typing(s, input, key) };
  if (s.ui.prompt) return prompting(s, input, key);
  if (s.ui.help) {
    if (input === "q") return { state: s, command: { type: "quit" } };
    return { state: ui(s, { help: false }) };
  }
  if (key.upArrow || input === "k") return { state: move(s, -1) };
  if (key.downArrow || input === "j") return { state: move(s, 1) };
  if (key.pageUp || key.pageDown) {
    if (s.ui.view !== "logs") return { state: move(s, key.pageUp ? -pageLines : pageLines) };
    const max = Math.max(0, visibleLogs(s).length - pageLines);
    const logScroll = Math.max(0, Math.min(max, s.ui.logScroll + (key.pageUp ? pageLines : -pageLines)));
    return { state: ui(s, { logScroll }) };
  }
  if (key.return) return { state: toggleView(s, "details") };
  if (key.escape) {
    if (s.ui.view !== "overview") return { state: ui(s, { view: "overview", logScroll: 0 }) };
    return { state: ui(s, { modelFilter: "", logFilter: "" }) };
  }
  const model = selectedModel(s)?.name;
  switch (input) {
    case "?":
      return { state: ui(s, { help: true }) };
    case "q":
      return { state: s, command: { type: "quit" } };
    case "/":
      return { state: ui(s, { filtering: s.ui.view === "logs" ? "logs" : "models" }) };
    case "l":
      return { state: toggleView(s, "logs") };
    case "m":
      return { state: toggleView(s, "metrics") };
    case "p":
      if (s.perf.status === "running") return { state: ui(s, { view: "perf" }), command: { type: "cancel-perf" } };
      if (!model) return { state: notice(s, "no model selected to measure", "error") };
      return { state: ui(s, { view: "perf", help: false }), command: perfCommand(s, model) };
    case "t":
      if (s.tune.status === "running") return { state: ui(s, { view: "tune" }), command: { type: "cancel-tune" } };
      if (!model) return { state: notice(s, "no model selected to tune", "error") };
      return { state: ui(s, { view: "tune", help: false }), command: { type: "tune", model } };
    case "P":
      if (!model) return { state: notice(s, "no model selected to measure", "error") };
      return { state: openShapesPrompt(s, model) };
    case "r":
      if (!model) return { state: notice(s, "no model selected to reload", "error") };
      return {
        state: notice(s, `reloading ${model}: validate, stage, load`, "info"),
        command: { type: "reload", model },
      };
    default:
      return { state: s };
  }
}

/**
 * Terminals deliver keys typed quickly, or pasted, as one chunk: each character is a key of its
 * own, so "/tok" starts a filter and types into it.
 */
export function handleInput(s: DashboardState, input: string, key: KeyInfo, pageLines = 10): KeyResult {
  const plain =
    !key.ctrl &&
    !key.escape &&
    !key.return &&
    !key.backspace &&
    !key.delete &&
    !key.upArrow &&
    !key.downArrow &&
    !key.pageUp &&
    !key.pageDown &&
    !key.tab;
  if (!plain || [...input].length <= 1) return handleKey(s, input, key, pageLines);
  let state = s;
  let command: Command | undefined;
  for (const ch of input) {
    if (state.ui.prompt) {
      // Text typed quickly arrives with its enter in the same chunk: enter still submits it.
      const r = handleKey(state, ch, ch === "\r" ? { return: true } : {}, pageLines);
      state = r.state;
      command ??= r.command;
      continue;
    }
    if (state.ui.filtering) {
      state = handleKey(state, ch, {}, pageLines).state;
      continue;
    }
    const r = handleKey(state, ch, {}, pageLines);
    state = r.state;
    // One command per chunk: "qq" quits once, "pp" does not start and cancel a run.
    if (r.command) {
      command ??= r.command;
    }
  }
  return { state, ...(command ? { command } : {}) };
}

export function notice(s: DashboardState, text: string, level: "info" | "error" = "info"): DashboardState {
  return ui(s, { notice: { text, at: s.now, level } });
}
