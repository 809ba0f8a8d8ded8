/**
 * The Python program that contains model code (see model-code-sandbox.ts): run with `python -I -S`
 * (no site, no .pth files: nothing of the model's environment runs before the walls are up) as
 * `launcher <settings-json> <argv...>`. It joins the cgroups it is given; in a mount namespace of
 * its own (`walls`) it builds a new root on an empty tmpfs holding only what the program needs,
 * bound read-only (the folders it is told to keep, the interpreter's prefix and the system's
 * library folders), a private /tmp for scratch, a fresh /proc, a /dev of null, zero, random and
 * urandom, and a few /etc files of its own, then pivots into it and brings the loopback interface
 * up. It forks the program with the resource limits set, as an unprivileged uid (when it is root
 * outside any user namespace, uid and gid `sandbox_uid`, an account of model code's own, or 65534
 * where that is not mapped; the caller's own uid, mapped, in a user namespace), with every
 * capability dropped and no_new_privs set, waits for it, and kills everything that program left
 * behind before it exits with the program's status. It says what it could not do on stderr, one
 * line each, starting with `triton-dev-contain:`; when the walls cannot be built, or the program
 * could not read what it needs as the uid it runs as, nothing runs and it exits with 97.
 */
export const CONTAIN_LAUNCHER = String.raw`
import ctypes, errno, fcntl, json, os, platform, resource, signal, socket, stat, struct, sys, time
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
CANNOT = 97

for procs in cfg.get("cgroups", []):
    try:
        with open(procs, "w") as f:
            f.write(str(os.getpid()))
    except OSError as e:
        say("cgroup not joined: " + procs + ": " + e.strerror)

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC, MS_PRIVATE, MS_RELATIME, MS_STRICTATIME = 1, 2, 4, 8, 32, 1024, 2048, 4096, 16384, 1 << 18, 1 << 21, 1 << 24
MNT_DETACH = 2
CLONE_NEWUSER = 0x10000000
NOBODY = 65534
def mapped(n, which):
    """Whether n is mapped in this process's user namespace (which: uid_map or gid_map)."""
    try:
        with open("/proc/self/" + which) as f:
            for line in f:
                inside, _, count = map(int, line.split())
                if inside <= n < inside + count:
                    return True
    except (OSError, ValueError):
        pass
    return False
def mount(src, target, fstype, flags, data=None):
    b = lambda s: s.encode() if s is not None else None
    if libc.mount(b(src), b(target), b(fstype), ctypes.c_ulong(flags), b(data)) != 0:
        raise _err(target)
def under(p, root):
    return p == root or p.startswith(root.rstrip("/") + "/")

def kept_flags(path):
    """The flags a read-only remount of a bind of path must keep: a user namespace may not clear them."""
    f = os.statvfs(path).f_flag
    flags = MS_NOSUID | MS_NODEV
    if f & 8:
        flags |= MS_NOEXEC
    if f & 2048:
        flags |= MS_NODIRATIME
    if f & 1024:
        flags |= MS_NOATIME
    else:
        flags |= MS_RELATIME if f & 4096 else MS_STRICTATIME
    return flags

def bind(src, target, readonly=True):
    try:
        mount(src, target, None, MS_BIND)
    except OSError as e:
        # Mounts locked under it (a namespace copied from a more privileged one) come along.
        if e.errno != errno.EINVAL:
            raise
        mount(src, target, None, MS_BIND | MS_REC)
    if readonly:
        mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept_flags(target))

def mounts():
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            point = parts[4].encode().decode("unicode_escape")
            out.append(point)
    return out

def pivot_root(new, old):
    nr = {"x86_64": 155, "aarch64": 41, "arm64": 41, "ppc64le": 203, "s390x": 217, "riscv64": 41}.get(platform.machine())
    if nr is None:
        raise OSError(errno.ENOSYS, "pivot_root: unknown architecture " + platform.machine())
    if libc.syscall(ctypes.c_long(nr), new.encode(), old.encode()) != 0:
        raise _err("pivot_root")

def loopback_up():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        ifr = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s, 0x8913, ifr))[1]
        fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", flags | 1))
    finally:
        s.close()

def wanted():
    """What the new root holds, bound read-only: {path inside: path outside}."""
    keep = {}
    def add(p):
        if not p or not os.path.exists(p):
            return
        real = os.path.realpath(p)
        if real == "/":
            return
        keep[real] = real
        keep[os.path.abspath(p)] = real
    for p in cfg["keep"]:
        add(p)
        pyvenv = os.path.join(p, "pyvenv.cfg")
        if os.path.isfile(pyvenv):
            for line in open(pyvenv):
                k, _, v = line.partition("=")
                if k.strip() == "home" and v.strip():
                    add(os.path.dirname(os.path.realpath(v.strip())))
    # The interpreters' own prefixes (under -S, sys.prefix is the base interpreter's).
    for p in (sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))):
        add(p)
    for exe in (sys.executable, argv[0] if argv else ""):
        if exe:
            root = os.path.dirname(os.path.dirname(os.path.abspath(exe)))
            add(root if os.path.isfile(os.path.join(root, "pyvenv.cfg")) else os.path.realpath(exe))
    # The dynamic loader and the system's libraries and tools, which the interpreter runs on.
    for d in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.isdir(d) and not os.path.islink(d):
            keep[d] = d
    for f in ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "alternatives", "os-release"):
        p = os.path.join("/etc", f)
        if os.path.exists(p) and not os.path.islink(p):
            keep[p] = p
    return keep

def wall_in(run_uid, home):
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    new = cfg["root"]
    mount("tmpfs", new, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=755")
    def inside(p):
        return os.path.join(new, p.lstrip("/"))
    def mkdirs(p, mode=0o111):
        # Folders on the way to what is bound are passages: they can be crossed, not listed.
        at = new
        for part in p.strip("/").split("/"):
            at = os.path.join(at, part)
            if not os.path.lexists(at):
                os.mkdir(at, mode)
    size = str(cfg["scratch_bytes"])
    for d in ("/tmp", "/dev", "/etc"):
        mkdirs(d, 0o755)
    mkdirs("/proc", 0o555)
    mount("tmpfs", inside("/tmp"), "tmpfs", MS_NOSUID | MS_NODEV, "size=" + size + ",mode=1777")
    keep = wanted()
    # Opened before anything is mounted over them, then bound parents first.
    fds = {}
    for p in sorted(keep, key=lambda p: (p.count("/"), p)):
        src = keep[p]
        fd = fds.get(src)
        if fd is None:
            fd = fds[src] = os.open(src, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            mkdirs(p)
        else:
            mkdirs(os.path.dirname(p))
            if not os.path.lexists(inside(p)):
                open(inside(p), "a").close()
        bind("/proc/self/fd/%d" % fd, inside(p))
    for fd in fds.values():
        os.close(fd)
    # Whole-system links (/lib -> usr/lib on a merged /usr) as they are.
    for d in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(d) and not os.path.lexists(inside(d)):
            os.symlink(os.readlink(d), inside(d))
    mount("tmpfs", inside("/dev"), "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=755")
    for dev in ("null", "zero", "random", "urandom"):
        open(inside("/dev/" + dev), "a").close()
        bind("/dev/" + dev, inside("/dev/" + dev), readonly=False)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, inside("/dev/" + name))
    os.mkdir(inside("/dev/shm"), 0o755)
    mount("tmpfs", inside("/dev/shm"), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=" + size + ",mode=1777")
    try:
        mount("proc", inside("/proc"), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError:
        bind("/proc", inside("/proc"), readonly=False)
    # Who is who, for code that looks itself up (getpass, pwd): nothing of the machine's /etc.
    me = cfg.get("user") or {}
    users = {0: "root", NOBODY: "nobody"}
    if run_uid not in users:
        users[run_uid] = (me.get("name") or "user") if in_userns else "triton-dev-model"
    gid = me.get("gid", 0) if in_userns else run_uid
    with open(inside("/etc/passwd"), "w") as f:
        for uid, name in sorted(users.items()):
            g = gid if uid == run_uid else uid
            f.write("%s:x:%d:%d::%s:/usr/sbin/nologin\n" % (name, uid, g, home if uid == run_uid else "/nonexistent"))
    with open(inside("/etc/group"), "w") as f:
        f.write("root:x:0:\nnogroup:x:65534:\n")
        if gid not in (0, NOBODY):
            f.write("%s:x:%d:\n" % (users[run_uid], gid))
    with open(inside("/etc/hosts"), "w") as f:
        f.write("127.0.0.1 localhost\n::1 localhost\n")
    os.makedirs(inside(home), mode=0o700, exist_ok=True)
    # In a user namespace its root is the caller, whom the program runs as; from real root, the run uid.
    if not in_userns:
        os.chown(inside(home), run_uid, run_uid)
    os.chdir(new)
    pivot_root(".", ".")
    if libc.umount2(b".", MNT_DETACH) != 0:
        raise _err("umount old root")
    os.chdir("/")
    mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    # What came along with a recursive bind is made read-only too.
    writable = ("/", "/tmp", "/dev/shm", "/dev/null", "/dev/zero", "/dev/random", "/dev/urandom")
    unsure = []
    for point in mounts():
        if point in writable or under(point, "/proc"):
            continue
        try:
            mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept_flags(point))
        except OSError as e:
            unsure.append(point + " (" + e.strerror + ")")
    if unsure:
        say("left writable: " + ", ".join(unsure))
    try:
        loopback_up()
    except OSError as e:
        say("loopback not up: " + e.strerror)

# Whether the caller made a user namespace for this run (a normal user's run), or is root.
in_userns = bool(cfg.get("userns"))
run_uid = None
home = cfg.get("home")
if cfg.get("walls"):
    # Root outside any user namespace runs the code as an account of its own, which no other
    # process shares (nobody where that uid is not mapped: root in a container's user namespace);
    # in a user namespace (a normal user's), as the user's own uid, which is all that namespace maps.
    own = cfg.get("sandbox_uid", NOBODY)
    run_uid = (
        (cfg.get("user") or {}).get("uid", 0)
        if in_userns
        else (own if mapped(own, "uid_map") and mapped(own, "gid_map") else NOBODY)
    )
    try:
        wall_in(run_uid, home)
    except OSError as e:
        say("cannot wall in the filesystem: " + str(e))
        sys.exit(CANNOT)

def become(uid):
    """As uid, with no capability left: the run uid, from root outside any user namespace; in the user
    namespace of a normal user's run, the user's own uid, mapped back in a namespace of its own."""
    me = cfg.get("user") or {}
    if uid is not None and in_userns and uid != 0:
        if libc.unshare(CLONE_NEWUSER) != 0:
            raise _err("unshare(CLONE_NEWUSER)")
        with open("/proc/self/setgroups", "w") as f:
            f.write("deny")
        with open("/proc/self/uid_map", "w") as f:
            f.write("%d 0 1" % uid)
        with open("/proc/self/gid_map", "w") as f:
            f.write("%d 0 1" % me.get("gid", 0))
    libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
    for cap in range(64):
        libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP: exec as uid 0 regains nothing
    if uid is not None and not in_userns:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    if libc.capset(header, data) != 0:
        raise _err("capset")

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
        for name, value in cfg["limits"].items():
            res = getattr(resource, name, None)
            if res is None or (name == "RLIMIT_AS" and not linux):
                continue  # macOS takes RLIMIT_AS but does not enforce it
            try:
                resource.setrlimit(res, (value, value))
            except (ValueError, OSError) as e:
                say(name + " not set: " + str(e))
        if linux:
            try:
                become(run_uid)
            except OSError as e:
                say("cannot drop privileges: " + str(e))
                os._exit(CANNOT)
        if run_uid is not None:
            # What the uid it runs as cannot read it cannot run: said once, plainly, not as an import error.
            for p in [argv[0]] + cfg.get("readable", []):
                if not os.access(p, os.R_OK | (os.X_OK if os.path.isdir(p) or p == argv[0] else 0)):
                    say("runs as: uid %d" % os.getuid())
                    say("unreadable: " + p)
                    os._exit(CANNOT)
        os.chdir(cfg["cwd"])
        os.execve(argv[0], argv, dict(os.environ))
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
