/**
 * The runtimes' names, apart from runtimes/kinds.ts's table: the driver interface, each driver and
 * the run record (state/run-state.ts, below the runtimes) name them, while the table loads the
 * drivers, so naming them through it would lead each driver back to itself and the record up into
 * runtimes/ (circles, if only of types). A leaf at the root, as errors.ts: the table must have
 * exactly these names (its `satisfies`), so adding a runtime adds its name here and its line there.
 */
export const RUNTIME_NAMES = ["local", "docker", "kind", "cluster"] as const;

export type RuntimeKind = (typeof RUNTIME_NAMES)[number];
