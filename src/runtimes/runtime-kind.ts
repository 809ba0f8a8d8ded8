/**
 * The runtimes' names, apart from kinds.ts's table: the driver interface, the run record and each
 * driver name them, while the table loads the drivers, so naming them through it would lead each
 * driver back to itself (an import circle, if only of types). kinds.ts's table must have exactly
 * these (its `satisfies`): adding a runtime adds its name here and its line there.
 */
export const RUNTIME_NAMES = ["local", "docker", "kind", "cluster"] as const;

export type RuntimeKind = (typeof RUNTIME_NAMES)[number];
