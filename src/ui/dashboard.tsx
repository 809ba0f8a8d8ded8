import { render, type Instance } from "ink";
import { REAL_CLOCK, type Clock } from "../clock.js";
import type { EventBus } from "../events/bus.js";
import { MetricsScraper, type ScrapeState } from "../metrics/scraper.js";
import { isDriverEvent } from "../events/driver-event.js";
import type { SessionEvent } from "../session/events.js";
import { closingFetch, TritonHttpClient } from "../triton/http-client.js";
import { App } from "./components/app.js";
import { followTritonLog } from "./controllers/log-feed.js";
import { PerfRunner, type QuickCheck, type RunPerf } from "./controllers/perf-runner.js";
import { TuneRunner, type RunTune } from "./controllers/tune-runner.js";
import { ServerPoller } from "./controllers/server-poller.js";
import { notice, type Command } from "./keys.js";
import {
  applyLogLines,
  applySessionEvent,
  clockKey,
  initialState,
  metricsFingerprint,
  type DashboardState,
} from "./state.js";
import { Store } from "./store.js";
import { colorEnabled, ThemeContext } from "./theme.js";

export interface DashboardOptions {
  bus: EventBus<SessionEvent>;
  env: NodeJS.ProcessEnv;
  /** Whether quitting stops the server (true for a foreground `up`). */
  ownsServer: boolean;
  runPerf: RunPerf;
  /** `runTune` from src/tune/run.ts, for `t`; without it `t` says tuning is not available here. */
  runTune?: RunTune;
  quickCheck?: QuickCheck;
  stdout?: NodeJS.WriteStream;
  stdin?: NodeJS.ReadStream;
  stderr?: NodeJS.WriteStream;
  scrapeIntervalMs?: number;
  now?: () => number;
  /** The time the panels' polls, the log batching and the elapsed-time tick run on (../clock.ts), and `now`. */
  clock?: Clock;
}

/** What the dashboard needs once Triton answers. */
export interface DashboardTarget {
  /** Triton's HTTP endpoint, e.g. http://127.0.0.1:8000 */
  baseUrl: string;
  /** Unlocks the repository index (the session's key). */
  repositoryKey?: { header: string; value: string };
  metricsUrl: string;
  /** The reload controller's entry point for `r`; absent until hot reload runs. */
  reload?: (model: string) => void;
  /** Staged paths in Triton's messages as the user's (state/staged-paths.ts userPathsOf). */
  userPaths?: (text: string) => string;
  /** The models the run serves, for "ready" (reload/stage.ts servedModels). */
  served?: () => Promise<string[]>;
}

export interface Dashboard {
  readonly store: Store<DashboardState>;
  /** Start the pollers against the running server. */
  attach(target: DashboardTarget): void;
  /**
   * Stop talking to Triton (pollers, scraper, a perf check) while the frame stays up: called
   * before the server is stopped, so no connection of ours holds its shutdown.
   */
  detach(): Promise<void>;
  /** Resolves when the user quits (q or Ctrl-C in the dashboard). */
  readonly quitRequested: Promise<void>;
  /** Stop every controller, unmount, and give the terminal back as it was. */
  close(): Promise<void>;
}

const HISTORY_REDRAW_MS = 20_000;

const ALT_SCREEN_ON = "\x1b[?1049h\x1b[H";
const ALT_SCREEN_OFF = "\x1b[?1049l";

/**
 * Open the dashboard on the terminal and feed it the session's events at once (setup and start
 * progress show while Triton comes up). Components only render the store; everything that
 * talks to Triton, the log or the perf engine lives in the controllers started here.
 */
export function openDashboard(o: DashboardOptions): Dashboard {
  const clock = o.clock ?? REAL_CLOCK;
  const now = o.now ?? (() => clock.now());
  const term: Terminal = {
    stdout: o.stdout ?? process.stdout,
    stdin: o.stdin ?? process.stdin,
    stderr: o.stderr ?? process.stderr,
  };
  const store = new Store<DashboardState>(initialState({ now: now(), ownsServer: o.ownsServer }));
  const stops: Stop[] = [];
  const feeds: Stop[] = [];
  let stopLog: (() => void) | undefined;
  let target: DashboardTarget | undefined;

  stops.push(
    o.bus.on((e) => {
      store.update((s) => applySessionEvent({ ...s, now: now() }, e));
      if (!isDriverEvent(e) && e.type === "starting" && !stopLog)
        stopLog = followTritonLog(store, e.logFile, 500, () => target?.userPaths, clock);
    }),
  );
  stops.push(startElapsedTick(store, now, clock));
  // Our own warnings would tear through the frame; they go to the log panel instead.
  stops.push(divertStderr(term.stderr, store));

  const perf = new PerfRunner({
    store,
    env: o.env,
    runPerf: o.runPerf,
    ...(o.quickCheck ? { check: o.quickCheck } : {}),
  });
  const tune = o.runTune ? new TuneRunner({ store, env: o.env, runTune: o.runTune }) : undefined;
  let resolveQuit!: () => void;
  const quitRequested = new Promise<void>((r) => (resolveQuit = r));
  const onCommand = commandHandler({ store, perf, tune, target: () => target, quit: resolveQuit });

  const tty = Boolean(term.stdout.isTTY);
  const instance = mountApp({ store, onCommand, now, env: o.env, scrapeIntervalMs: o.scrapeIntervalMs, term, tty });

  let closed: Promise<void> | undefined;
  const detach = async () => {
    await perf.close();
    await tune?.close();
    for (const stop of feeds.splice(0).reverse()) await stop();
  };
  return {
    store,
    quitRequested,
    attach(t) {
      if (target) return;
      target = t;
      // Lines read before the run's paths were known name the staging copy: name the user's.
      if (t.userPaths) showUserPaths(store, t.userPaths);
      startFeeds(t, { store, env: o.env, clock, now, scrapeIntervalMs: o.scrapeIntervalMs }, feeds);
    },
    detach,
    close() {
      closed ??= (async () => {
        await detach();
        stopLog?.();
        for (const stop of stops.reverse()) await stop();
        await unmountApp(instance, store, term, tty);
      })();
      return closed;
    },
  };
}

type Stop = () => void | Promise<void>;

interface Terminal {
  stdout: NodeJS.WriteStream;
  stdin: NodeJS.ReadStream;
  stderr: NodeJS.WriteStream;
}

/** Move the store's clock each second the elapsed times it shows would change; returns its stop. */
function startElapsedTick(store: Store<DashboardState>, now: () => number, clock: Clock): Stop {
  const tick = clock.setInterval(
    () => {
      const t = now();
      store.update((s) => (clockKey(s, t) === clockKey(s, s.now) ? s : { ...s, now: t }));
    },
    1000,
    { unref: true },
  );
  return () => clock.clearInterval(tick);
}

/** Send what is written to `stderr` to the log panel, line by line; returns what puts it back. */
function divertStderr(stderr: NodeJS.WriteStream, store: Store<DashboardState>): Stop {
  const realWrite = stderr.write.bind(stderr);
  let partial = "";
  stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    partial += typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8");
    const lines = partial.split("\n");
    partial = lines.pop() ?? "";
    if (lines.length)
      store.update((s) =>
        applyLogLines(
          s,
          lines.filter((l) => l.trim()).map((text) => ({ source: "tool" as const, text, level: "-" as const })),
        ),
      );
    const cb = rest.find((r) => typeof r === "function") as (() => void) | undefined;
    cb?.();
    return true;
  }) as typeof stderr.write;
  return () => {
    stderr.write = realWrite as typeof stderr.write;
  };
}

interface CommandDeps {
  store: Store<DashboardState>;
  perf: PerfRunner;
  tune: TuneRunner | undefined;
  /** The server once `attach` said where it is. */
  target: () => DashboardTarget | undefined;
  quit: () => void;
}

/** What the keys ask for (keys.ts), done by the controllers, or a notice saying why not now. */
function commandHandler({ store, perf, tune, target: attached, quit }: CommandDeps): (c: Command) => void {
  return (c) => {
    const target = attached();
    switch (c.type) {
      case "quit":
        store.update(
          (s) => notice(s, s.ownsServer ? "stopping Triton…" : "quitting; the detached server keeps running"),
          true,
        );
        quit();
        return;
      case "reload":
        if (!target?.reload) store.update((s) => notice(s, "hot reload is not running yet", "error"), true);
        else target.reload(c.model);
        return;
      case "perf":
        if (!target) store.update((s) => notice(s, "Triton is not up yet", "error"), true);
        else perf.start(c.model, c.shapes);
        return;
      case "cancel-perf":
        perf.cancel();
        store.update((s) => notice(s, "cancelling the perf check…"), true);
        return;
      case "tune":
        if (!target) store.update((s) => notice(s, "Triton is not up yet", "error"), true);
        else if (!tune) store.update((s) => notice(s, "tuning is not available in this dashboard", "error"), true);
        else if (perf.busy) store.update((s) => notice(s, "a perf check is running; tune after it", "error"), true);
        else tune.start(c.model);
        return;
      case "cancel-tune":
        tune?.cancel();
        store.update((s) => notice(s, "stopping the tune; the best found so far follows…"), true);
        return;
    }
  };
}

interface MountOptions {
  store: Store<DashboardState>;
  onCommand: (c: Command) => void;
  now: () => number;
  env: NodeJS.ProcessEnv;
  scrapeIntervalMs: number | undefined;
  term: Terminal;
  tty: boolean;
}

/** Render the App on the terminal (its alternate screen when it is one). */
function mountApp({ store, onCommand, now, env, scrapeIntervalMs, term, tty }: MountOptions): Instance {
  if (tty) term.stdout.write(ALT_SCREEN_ON);
  const theme = { color: colorEnabled(env) };
  return render(
    <ThemeContext.Provider value={theme}>
      <App store={store} onCommand={onCommand} clock={now} {...(scrapeIntervalMs ? { scrapeIntervalMs } : {})} />
    </ThemeContext.Provider>,
    { ...term, exitOnCtrlC: false, patchConsole: true, maxFps: 15 },
  );
}

/** Unmount the App and give the terminal back as it was, once every controller has stopped. */
async function unmountApp(
  instance: Instance,
  store: Store<DashboardState>,
  term: Terminal,
  tty: boolean,
): Promise<void> {
  store.flush();
  // Asked for before unmounting: Ink only settles a promise that exists when it unmounts.
  const exited = instance.waitUntilExit().catch(() => undefined);
  instance.unmount();
  await exited;
  if (tty) term.stdout.write(ALT_SCREEN_OFF);
  // What this program warned about while the dashboard was up stays visible after it.
  for (const l of store.getState().logs) if (l.source === "tool") term.stderr.write(`${l.text}\n`);
}

/** Triton's lines already in the panel, with the user's paths for the staged ones. */
function showUserPaths(store: Store<DashboardState>, map: (text: string) => string): void {
  store.update((s) => ({
    ...s,
    logs: s.logs.map((l) => (l.source === "triton" ? { ...l, text: map(l.text) } : l)),
  }));
}

interface FeedDeps {
  store: Store<DashboardState>;
  env: NodeJS.ProcessEnv;
  clock: Clock;
  now: () => number;
  scrapeIntervalMs: number | undefined;
}

/** Start polling the server and scraping its metrics; their stops go to `feeds`. */
function startFeeds(t: DashboardTarget, { store, env, clock, now, scrapeIntervalMs }: FeedDeps, feeds: Stop[]): void {
  const client = new TritonHttpClient(t.baseUrl, {
    fetch: closingFetch,
    timeoutMs: 5000,
    ...(t.repositoryKey ? { repositoryKey: t.repositoryKey } : {}),
  });
  const poller = new ServerPoller({
    store,
    client,
    env,
    clock,
    ...(t.userPaths ? { userPaths: t.userPaths } : {}),
    ...(t.served ? { served: t.served } : {}),
  });
  poller.start();
  feeds.push(() => poller.stop());
  const scraper = new MetricsScraper({
    url: t.metricsUrl,
    fetch: closingFetch,
    intervalMs: scrapeIntervalMs ?? 2000,
    clock,
    onUpdate: metricsUpdater(store, now),
  });
  scraper.start();
  feeds.push(() => scraper.stop());
}

/** Puts each scrape in the store, unless drawing it would change nothing a reader needs. */
function metricsUpdater(store: Store<DashboardState>, now: () => number): (m: ScrapeState) => void {
  let shown = "";
  let shownAt = 0;
  return (m) => {
    const f = metricsFingerprint(m);
    // The `m` view shows host CPU use, which moves every scrape; elsewhere a scrape that only
    // lengthens the idle history is drawn every HISTORY_REDRAW_MS, not every 2 s.
    const t = now();
    if (f === shown && t - shownAt < HISTORY_REDRAW_MS && store.getState().ui.view !== "metrics") return;
    shown = f;
    shownAt = t;
    store.update((s) => ({ ...s, metrics: m }));
  };
}
