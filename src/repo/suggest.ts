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
export function closest(word: string, candidates: Iterable<string>): string | undefined {
  const w = word.toLowerCase();
  const limit = Math.min(3, Math.max(1, Math.floor(w.length / 3)));
  let best: string | undefined;
  let bestD = limit + 1;
  for (const c of candidates) {
    const d = editDistance(w, c.toLowerCase(), limit);
    if (d < bestD) {
      best = c;
      bestD = d;
    }
  }
  return best;
}

/** `'a'`, `'a' or 'b'`, `'a', 'b' or 'c'`. */
export function quoteList(items: readonly string[], conj = "or"): string {
  const q = items.map((s) => `'${s}'`);
  if (q.length <= 1) return q.join("");
  return `${q.slice(0, -1).join(", ")} ${conj} ${q[q.length - 1]}`;
}
