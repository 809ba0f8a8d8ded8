"""Writes a wheel from the JSON spec on stdin and prints its path (test/helpers/wheels.ts says
what kinds; bench/real-models.mjs uses it too, so the bench needs no package index either)."""
import base64, hashlib, json, os, sys, zipfile
spec = json.load(sys.stdin)
def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
def write(path, entries, tag):
    di = spec["name"].replace("-", "_") + "-" + spec["version"] + ".dist-info"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        record = []
        for name, data in entries:
            if name.endswith(".dist-info/RECORD"):
                continue
            z.writestr(name, data)
            record.append("%s,%s,%d" % (name, digest(data), len(data)))
        record.append(di + "/RECORD,,")
        z.writestr(di + "/RECORD", "\n".join(record) + "\n")
if spec["kind"] == "source":
    name, version = spec["name"], spec["version"]
    di = name.replace("-", "_") + "-" + version + ".dist-info"
    meta = "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version)
    if spec.get("requiresPython"):
        meta += "Requires-Python: %s\n" % spec["requiresPython"]
    for r in spec.get("requires", []):
        meta += "Requires-Dist: %s\n" % r
    entries = []
    root = spec["source"]
    for d, _, files in os.walk(root):
        for f in sorted(files):
            if f.endswith(".pyc"):
                continue
            full = os.path.join(d, f)
            entries.append((os.path.relpath(full, root).replace(os.sep, "/"), open(full, "rb").read()))
    entries.append((di + "/METADATA", meta.encode()))
    entries.append((di + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: triton-dev-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"))
    out = os.path.join(spec["out"], "%s-%s-py3-none-any.whl" % (name.replace("-", "_"), version))
    write(out, entries, "py3-none-any")
else:
    import importlib.metadata as m
    dist = m.distribution(spec["name"])
    spec["version"] = dist.version
    entries = []
    for f in dist.files:
        p = f.locate()
        # Scripts installed outside site-packages (../../../bin/f2py) are left out: a wheel would
        # carry them under .data/scripts, and nothing here runs them.
        if str(f).startswith(".."):
            continue
        if os.path.isfile(p) and not str(f).endswith(".pyc") and "__pycache__" not in str(f):
            entries.append((str(f).replace(os.sep, "/"), open(p, "rb").read()))
    wheel = dist.read_text("WHEEL") or ""
    tag = [l.split(":", 1)[1].strip() for l in wheel.splitlines() if l.startswith("Tag:")][0]
    out = os.path.join(spec["out"], "%s-%s-%s.whl" % (dist.metadata["Name"].replace("-", "_"), dist.version, tag))
    write(out, entries, tag)
print(out)
