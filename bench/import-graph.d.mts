// Types of bench/import-graph.mjs, for test/architecture.test.ts.
export interface ImportEdge {
  from: string;
  to: string;
  kind: "value" | "dynamic" | "type";
}
export function importGraph(src?: string): { files: string[]; edges: ImportEdge[] };
export function room(file: string): string;
export function circles(nodes: readonly string[], pairs: ReadonlyArray<readonly [string, string]>): string[][];
export function backArrows(
  nodes: readonly string[],
  pairs: ReadonlyArray<readonly [string, string]>,
): Array<[string, string]>;
export function floors(
  nodes: readonly string[],
  pairs: ReadonlyArray<readonly [string, string]>,
): { floors: number; chain: string[] };
export function measure(src?: string): Record<string, unknown>;
