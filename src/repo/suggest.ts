/**
 * Optimal-string-alignment distance: Levenshtein plus adjacent transpositions ("ecoh" -> "echo"
 * is one edit, the commonest typo), early-exiting once it exceeds `max`.
 */
export function editDistance(a: string, b: string, max = Infinity): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let prev2: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min((prev[j] ?? 0) + 1, (cur[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, (prev2[j - 2] ?? 0) + 1);
      cur.push(v);
      if (v < rowMin) rowMin = v;
    }
    if (rowMin > max) return max + 1;
    prev2 = prev;
    prev = cur;
  }
  return prev[b.length] ?? 0;
}

/**
 * The candidate closest to `word` when it is close enough to be a plausible typo (case is
 * ignored; a third of the length, at least 1 and at most 3 edits).
 */
export function closest(word: string, candidates: Iterable<string>, budget?: SuggestionBudget): string | undefined {
  const w = word.toLowerCase();
  const limit = Math.min(3, Math.max(1, Math.floor(w.length / 3)));
  let best: string | undefined;
  let bestD = limit + 1;
  for (const c of candidates) {
    if (budget && budget.comparisons-- <= 0) return undefined;
    // Names whose lengths differ by more than the limit cannot be close: skip the lowercasing too.
    if (Math.abs(c.length - w.length) > limit) continue;
    const d = editDistance(w, c.toLowerCase(), limit);
    if (d < bestD) {
      best = c;
      bestD = d;
    }
  }
  return best;
}

/**
 * How many name comparisons the typo suggestions of one model may still make. Each suggestion
 * scans every candidate, so a config with thousands of unknown names against thousands of known
 * ones (a generated or corrupted file) would take minutes; past the budget, hints go without
 * "did you mean". Real configs use a tiny fraction of it.
 */
export class SuggestionBudget {
  constructor(public comparisons = 200_000) {}
}

/** `'a'`, `'a' or 'b'`, `'a', 'b' or 'c'`; past `max` items, `'a', 'b' and 7 more`. */
export function quoteList(items: readonly string[], conj = "or", max = 8): string {
  if (items.length > max)
    return `${items
      .slice(0, max)
      .map((s) => `'${s}'`)
      .join(", ")} ${conj === "or" ? "or one of" : "and"} ${items.length - max} more`;
  const q = items.map((s) => `'${s}'`);
  if (q.length <= 1) return q.join("");
  return `${q.slice(0, -1).join(", ")} ${conj} ${q[q.length - 1]}`;
}

/** `a -> b -> c -> a`; a cycle longer than `max` shows its start and end around a count. */
export function cycleText(cycle: readonly string[], max = 8): string {
  const closed = [...cycle, cycle[0]!];
  if (cycle.length <= max) return closed.join(" -> ");
  return `${closed.slice(0, max / 2).join(" -> ")} -> … (${closed.length - max} more) -> ${closed.slice(-max / 2).join(" -> ")}`;
}
