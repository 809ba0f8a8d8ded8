/**
 * A byte count as the dashboard shows sizes (one GiB decimal, or whole MiB). Here, beside the
 * events, because runtimes word their own events with it and the panels format with it too.
 */
export function bytes(n: number): string {
  const gib = n / 2 ** 30;
  return gib >= 1 ? `${gib.toFixed(1)} GiB` : `${(n / 2 ** 20).toFixed(0)} MiB`;
}
