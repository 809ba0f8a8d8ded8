/**
 * The Python program that contains model code (see model-code-sandbox.ts): run with `python -I -S`
 * (no site, no .pth files: nothing of the model's environment runs before the walls are up) as
 * `launcher <settings-json> <argv...>`. It joins the cgroups it is given, hides and replaces
 * folders and makes every other mount read-only (when it runs in a mount namespace of its own),
 * then forks the program with the resource limits set, every capability dropped and
 * no_new_privs set, waits for it, and kills everything that program left behind before it exits
 * with the program's status. It says what it could not do on stderr, one line each, starting
 * with `triton-dev-contain:`.
 */
export const CONTAIN_LAUNCHER = String.raw`
import ctypes, json, os, signal, sys, time
cfg = json.loads(sys.argv[1])
argv = sys.argv[2:]
linux = sys.platform.startswith("linux")
def say(msg):
    sys.stderr.write("triton-dev-contain: " + msg + "\n")
    sys.stderr.flush()
libc = ctypes.CDLL(None, use_errno=True) if linux else None
def _err(what):
    e = ctypes.get_errno()
    return OSError(e, os.strerror(e), what)

for procs in cfg.get("cgroups", []):
    try:
        with open(procs, "w") as f:
            f.write(str(os.getpid()))
    except OSError as e:
        say("cgroup not joined: " + procs + ": " + e.strerror)

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC, MS_PRIVATE, MS_RELATIME, MS_STRICTATIME = 1, 2, 4, 8, 32, 1024, 2048, 4096, 16384, 1 << 18, 1 << 21, 1 << 24
KEPT_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME, "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME}
def mount(src, target, fstype, flags, data=None):
    b = lambda s: s.encode() if s is not None else None
    if libc.mount(b(src), b(target), b(fstype), ctypes.c_ulong(flags), b(data)) != 0:
        raise _err(target)
def under(p, root):
    return p == root or p.startswith(root.rstrip("/") + "/")

def mounts():
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            point = parts[4].encode().decode("unicode_escape")
            out.append((point, parts[5].split(",")))
    return out

def wall_in():
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    scratch = sorted({os.path.realpath(p) for p in cfg["scratch"] if os.path.isdir(p)}, key=len)
    hidden = sorted({os.path.realpath(p) for p in cfg["hide"] if os.path.isdir(p) and os.path.realpath(p) != "/"}, key=len)
    keep = set()
    for p in cfg["keep"]:
        if not os.path.exists(p):
            continue
        keep.add(os.path.abspath(p))
        keep.add(os.path.realpath(p))
        cfgfile = os.path.join(p, "pyvenv.cfg")
        if os.path.isfile(cfgfile):
            for line in open(cfgfile):
                k, _, v = line.partition("=")
                if k.strip() == "home" and v.strip():
                    keep.add(os.path.dirname(os.path.realpath(v.strip())))
    for p in (sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))):
        keep.add(p)
    # Under -S, sys.prefix is the base interpreter's, not the virtual environment's: the folder
    # of the program about to run (and of this Python) is kept whole when it is an environment.
    for exe in (sys.executable, argv[0] if argv else ""):
        if not exe:
            continue
        root = os.path.dirname(os.path.dirname(os.path.abspath(exe)))
        keep.add(root if os.path.isfile(os.path.join(root, "pyvenv.cfg")) else os.path.abspath(exe))
    # A folder the model needs is never hidden itself (only what is around it).
    hidden = [h for h in hidden if h not in keep]
    roots = sorted(scratch + hidden, key=len)
    # The kept paths that a hidden or scratch folder covers, opened before it is covered.
    covered = sorted((p for p in keep if any(under(p, r) and p != r for r in roots)), key=len)
    fds = [(p, os.open(p, os.O_PATH)) for p in covered]
    size = str(cfg["scratch_bytes"])
    for r in roots:
        os.makedirs(r, exist_ok=True)
        if r in scratch:
            mount("tmpfs", r, "tmpfs", MS_NOSUID | MS_NODEV, "size=" + size + ",mode=1777")
        else:
            mount("tmpfs", r, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
    for p, fd in fds:
        if os.path.isdir("/proc/self/fd/%d" % fd):
            os.makedirs(p, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(p), exist_ok=True)
            open(p, "a").close()
        mount("/proc/self/fd/%d" % fd, p, None, MS_BIND | MS_REC)
        os.close(fd)
    writable = set(scratch)
    unsure = []
    for point, opts in mounts():
        if point in writable:
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        for o in opts:
            flags |= KEPT_FLAGS.get(o, 0)
        try:
            mount(None, point, None, flags)
        except OSError as e:
            if e.errno == 2:
                continue  # under a folder hidden above
            if not any(under(point, s) for s in ("/proc", "/sys", "/dev")):
                unsure.append(point + " (" + e.strerror + ")")
    if unsure:
        say("left writable: " + ", ".join(unsure))

if cfg.get("walls"):
    try:
        wall_in()
    except OSError as e:
        say("cannot wall in the filesystem: " + str(e))
        sys.exit(97)

def drop_privileges():
    libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
    for cap in range(64):
        libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP: exec as uid 0 regains nothing
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    if libc.capset(header, data) != 0:
        say("capabilities not dropped: " + os.strerror(ctypes.get_errno()))

def family():
    """Every process below this one, from /proc (this process is their subreaper)."""
    parent = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    s = f.read()
                parent[int(d)] = int(s[s.rindex(")") + 2:].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    me, out, frontier = os.getpid(), set(), {os.getpid()}
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier and p not in out and p != me}
        out |= frontier
    return out

def reap():
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return

def kill_all(child):
    try:
        os.killpg(child, signal.SIGKILL)
    except OSError:
        pass
    if not linux:
        return
    for _ in range(200):
        left = family()
        if not left:
            return
        for p in left:
            try:
                os.kill(p, signal.SIGSTOP)
            except OSError:
                pass
        for p in left:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        reap()
        time.sleep(0.005)
    say("processes still running: " + " ".join(map(str, sorted(family()))))

if linux:
    libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans that left the session come back here
child = os.fork()
if child == 0:
    try:
        os.setpgid(0, 0)
        import resource
        for name, value in cfg["limits"].items():
            res = getattr(resource, name, None)
            if res is None or (name == "RLIMIT_AS" and not linux):
                continue  # macOS takes RLIMIT_AS but does not enforce it
            try:
                resource.setrlimit(res, (value, value))
            except (ValueError, OSError) as e:
                say(name + " not set: " + str(e))
        if linux:
            drop_privileges()
        os.chdir(cfg["cwd"])
        os.execve(argv[0], argv, dict(os.environ, **cfg["env"]))
    except BaseException as e:
        say("cannot start " + argv[0] + ": " + str(e))
        os._exit(127)
def stop(signum, frame):
    kill_all(child)
    os._exit(128 + signum)
signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
while True:
    try:
        pid, status = os.waitpid(child, 0)
        break
    except InterruptedError:
        continue
kill_all(child)
code = os.waitstatus_to_exitcode(status)
os._exit(code if code >= 0 else 128 - code)
`;
