"""Repack the nvidia-pytriton wheel for one Python version, LZMA-compressed.

The GPU runs happen on a machine without network access; everything travels with the working
tree under a size limit. Only the stub for the target Python is kept (the others, and the
bundled libpython for 3.13, are dead weight there). RECORD is rewritten so pip installs it as usual.

usage: python3 slim-wheel.py IN.whl OUT_DIR 3.12
"""

import base64
import hashlib
import sys
import zipfile
from pathlib import Path

src, out_dir, keep = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
out_dir.mkdir(parents=True, exist_ok=True)
dst = out_dir / src.name
records = []
with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", compression=zipfile.ZIP_LZMA) as zout:
    record_name = next(n for n in zin.namelist() if n.endswith(".dist-info/RECORD"))
    for info in zin.infolist():
        n = info.filename
        if n == record_name:
            continue
        if "/python_backend_stubs/" in n and f"/python_backend_stubs/{keep}/" not in n:
            continue
        if "nvidia_pytriton.libs/libpython3-" in n and keep != "3.13":
            continue
        data = zin.read(info)
        zi = zipfile.ZipInfo(n, date_time=info.date_time)
        zi.external_attr = info.external_attr
        zi.compress_type = zipfile.ZIP_LZMA
        zout.writestr(zi, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        records.append(f"{n},sha256={digest},{len(data)}")
    records.append(f"{record_name},,")
    zout.writestr(record_name, "\n".join(records) + "\n")
print(dst, dst.stat().st_size)
