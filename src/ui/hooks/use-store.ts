import { useSyncExternalStore } from "react";
import type { Store } from "../store.js";

export function useStore<S>(store: Store<S>): S {
  return useSyncExternalStore(store.subscribe, store.getState, store.getState);
}
