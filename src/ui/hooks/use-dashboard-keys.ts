import { useInput } from "ink";
import { handleInput, type Command } from "../keys.js";
import type { DashboardState } from "../state.js";
import type { Store } from "../store.js";

/** Keys change the view state in the store; work they ask for goes to `onCommand`. */
export function useDashboardKeys(
  store: Store<DashboardState>,
  onCommand: (c: Command) => void,
  pageLines: number,
  clock: () => number = Date.now,
): void {
  useInput((input, key) => {
    // The store's clock moves only when the screen needs it; a notice is stamped with the real time.
    const before = store.getState();
    const r = handleInput({ ...before, now: clock() }, input, key, pageLines);
    if (r.state.ui !== before.ui) store.update(() => r.state, true);
    if (r.command) onCommand(r.command);
  });
}
