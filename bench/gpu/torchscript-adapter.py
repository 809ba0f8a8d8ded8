"""TorchScript ResNet-50 through the local runtime's adapter (Triton's python backend running PyTorch,
reload/adapters/) against torch's own forward of the same module on the same card, per batch size,
for each way the adapter passes tensors (the staged parameter TRITON_DEV_TORCH_TENSORS), in one run:

  numpy      the host round trip: inputs as numpy views of the stub's shared memory, copied to
             the GPU; outputs copied back to the host (.cpu().numpy()) and into shared memory
             (resnet50_ts_numpy: its config sets the parameter and FORCE_CPU_ONLY_INPUT_TENSORS
             "yes", which staging keeps)
  dlpack_in  inputs through DLPack where Triton put them; outputs as numpy (resnet50_ts_dlpack_in)
  dlpack     the default on a GPU instance: inputs and outputs through DLPack, outputs left on the
             GPU; staging adds FORCE_CPU_ONLY_INPUT_TENSORS "no" (resnet50_ts: the article's config
             as it is, no parameter)

each sent two ways: HTTP with the binary tensor extension (the input reaches Triton in host memory),
and CUDA shared memory for the input and the output (the input is on the GPU already, as after a GPU
model in an ensemble: the case FORCE_CPU_ONLY_INPUT_TENSORS "no" and DLPack are for).

  make DIR        write DIR/resnet50_ts{,_numpy,_dlpack_in} (one model.pt traced from fixed-seed
                  weights, the article's pytorch_libtorch config, one KIND_GPU instance each)
  make-auto DIR   write DIR/resnet50_ts_auto: the same model, KIND_AUTO, no parameter
  check URL DIR   one batch of 2 through resnet50_ts_auto against torch's forward on the CPU: the
                  default path where Triton sees no GPU (the script starts that server with
                  CUDA_VISIBLE_DEVICES empty)
  measure URL DIR for each batch: torch forward alone (input on the GPU), torch from a numpy array
                  (host to device, forward, back), and Triton's compute_infer per request
                  (/v2/models/M/stats: the python backend's hand-over, the adapter, the same
                  forward) for each path and transport; prints the ratios adapter / forward and
                  adapter / numpy round trip, each path's ratio to the numpy path on the same
                  transport (after / before), and checks each answer equals torch's

ResNet-50 is written out here (torchvision is not needed on the GPU machine). CUDA shared memory is
allocated through the driver (libcuda, cuMemAlloc and cuIpcGetMemHandle): no tritonclient or
cuda-python is needed. Environment: BATCHES (1,8,32), ITERS (50), PATHS, TRANSPORTS.
"""

import base64
import ctypes
import json
import os
import shutil
import statistics
import sys
import time
import urllib.error
import urllib.request

import numpy as np
import torch
import torch.nn as nn

BATCHES = [int(b) for b in os.environ.get("BATCHES", "1,8,32").split(",")]
ITERS = int(os.environ.get("ITERS", "50"))
PATHS = os.environ.get("PATHS", "numpy,dlpack_in,dlpack").split(",")
TRANSPORTS = os.environ.get("TRANSPORTS", "http,cudashm").split(",")
# The model each path is served as: the adapter's mode comes from the staged config.
MODELS = {"numpy": "resnet50_ts_numpy", "dlpack_in": "resnet50_ts_dlpack_in", "dlpack": "resnet50_ts"}


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        cout = width * 4
        self.c1, self.b1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.c2, self.b2 = nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width)
        self.c3, self.b3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        y = torch.relu(self.b2(self.c2(y)))
        y = self.b3(self.c3(y))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class ResNet50(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        layers, cin = [], 64
        for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for i in range(blocks):
                layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
                cin = width * 4
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(2048, 1000)

    def forward(self, x):
        return self.fc(torch.flatten(torch.mean(self.layers(self.stem(x)), dim=(2, 3)), 1))


CONFIG = """platform: "pytorch_libtorch"
max_batch_size: 64
input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 3, 224, 224 ] } ]
output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 1000 ] } ]
instance_group [ { count: 1 kind: KIND_GPU } ]
"""

# What each model's config adds to the article's: the user's own parameters, which staging keeps.
EXTRA = {
    "numpy": 'parameters: { key: "TRITON_DEV_TORCH_TENSORS" value: { string_value: "numpy" } }\n'
    'parameters: { key: "FORCE_CPU_ONLY_INPUT_TENSORS" value: { string_value: "yes" } }\n',
    "dlpack_in": 'parameters: { key: "TRITON_DEV_TORCH_TENSORS" value: { string_value: "dlpack_in" } }\n',
    "dlpack": "",
}


def make(root):
    torch.manual_seed(0)
    m = ResNet50().eval()
    first = None
    for path in PATHS:
        d = os.path.join(root, MODELS[path], "1")
        os.makedirs(d, exist_ok=True)
        target = os.path.join(d, "model.pt")
        if first is None:
            with torch.no_grad():
                torch.jit.trace(m, torch.zeros(1, 3, 224, 224)).save(target)
            first = target
        else:
            shutil.copyfile(first, target)
        with open(os.path.join(root, MODELS[path], "config.pbtxt"), "w") as f:
            f.write(CONFIG + EXTRA[path])


def run_key():
    """The run's key: the shared-memory APIs are restricted to it (README: who can reach the server)."""
    path = os.environ.get("TRITON_DEV_KEY_FILE")
    if not path:
        return {}
    with open(path) as f:
        return {"triton-dev-key": f.read().strip()}


def post(url, body, headers=None):
    req = urllib.request.Request(url, data=body, method="POST")
    for k, v in {**(headers or {}), **(run_key() if "sharedmemory/" in url else {})}.items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req) as r:
            return r.read(), r.headers
    except urllib.error.HTTPError as e:
        raise RuntimeError(url + ": " + str(e.code) + " " + e.read().decode()[:500]) from None


def infer_http(url, model, x):
    header = json.dumps({
        "inputs": [{"name": "INPUT__0", "shape": list(x.shape), "datatype": "FP32", "parameters": {"binary_data_size": x.nbytes}}],
        "outputs": [{"name": "OUTPUT__0", "parameters": {"binary_data": True}}],
    }).encode()
    body, headers = post(
        url + "/v2/models/" + model + "/infer", header + x.tobytes(),
        {"Inference-Header-Content-Length": str(len(header)), "Content-Type": "application/octet-stream"},
    )
    n = int(headers["Inference-Header-Content-Length"])
    return np.frombuffer(body[n:], dtype=np.float32).reshape(x.shape[0], 1000)


class CudaRegion:
    """Device memory another process can open (cuIpcGetMemHandle), registered with Triton as a CUDA
    shared memory region. The driver API is enough: libcuda comes with the driver."""

    cu = None

    def __init__(self, url, name, nbytes, device=0):
        if CudaRegion.cu is None:
            cu = ctypes.CDLL("libcuda.so.1")
            cu.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
            cu.cuMemFree_v2.argtypes = [ctypes.c_uint64]
            cu.cuIpcGetMemHandle.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
            cu.cuMemcpyHtoD_v2.argtypes = [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t]
            cu.cuMemcpyDtoH_v2.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t]
            CudaRegion.cu = cu
        cu = CudaRegion.cu
        self.check(cu.cuInit(0), "cuInit")
        dev = ctypes.c_int()
        self.check(cu.cuDeviceGet(ctypes.byref(dev), device), "cuDeviceGet")
        ctx = ctypes.c_void_p()
        # The device's primary context: the one torch uses, so its work and this memory share it.
        self.check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
        self.check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        self.ptr = ctypes.c_uint64()
        self.check(cu.cuMemAlloc_v2(ctypes.byref(self.ptr), nbytes), "cuMemAlloc")
        handle = (ctypes.c_char * 64)()
        self.check(cu.cuIpcGetMemHandle(ctypes.addressof(handle), self.ptr.value), "cuIpcGetMemHandle")
        self.url, self.name, self.nbytes = url, name, nbytes
        try:  # a region of that name left by an earlier run
            post(url + "/v2/cudasharedmemory/region/" + name + "/unregister", b"")
        except RuntimeError:
            pass
        post(url + "/v2/cudasharedmemory/region/" + name + "/register", json.dumps({
            "raw_handle": {"b64": base64.b64encode(bytes(handle)).decode()}, "device_id": device, "byte_size": nbytes,
        }).encode(), {"Content-Type": "application/json"})

    @staticmethod
    def check(rc, what):
        if rc != 0:
            raise RuntimeError(what + " failed: CUresult " + str(rc))

    def write(self, a):
        self.check(CudaRegion.cu.cuMemcpyHtoD_v2(self.ptr.value, a.ctypes.data, a.nbytes), "cuMemcpyHtoD")

    def read(self, a):
        self.check(CudaRegion.cu.cuMemcpyDtoH_v2(a.ctypes.data, self.ptr.value, a.nbytes), "cuMemcpyDtoH")
        return a

    def close(self):
        try:
            post(self.url + "/v2/cudasharedmemory/region/" + self.name + "/unregister", b"")
        finally:
            CudaRegion.cu.cuMemFree_v2(self.ptr.value)


def infer_cudashm(url, model, b, inp, out):
    body = json.dumps({
        "inputs": [{"name": "INPUT__0", "shape": [b, 3, 224, 224], "datatype": "FP32",
                    "parameters": {"shared_memory_region": inp.name, "shared_memory_byte_size": b * 3 * 224 * 224 * 4}}],
        "outputs": [{"name": "OUTPUT__0",
                     "parameters": {"shared_memory_region": out.name, "shared_memory_byte_size": b * 1000 * 4}}],
    }).encode()
    post(url + "/v2/models/" + model + "/infer", body, {"Content-Type": "application/json"})


def stats(url, model):
    s = json.load(urllib.request.urlopen(url + "/v2/models/" + model + "/stats"))["model_stats"][0]["inference_stats"]
    return s["compute_infer"]["ns"], s["compute_infer"]["count"]


def timed(fn, n):
    t = []
    for _ in range(n):
        a = time.perf_counter()
        fn()
        t.append(time.perf_counter() - a)
    return statistics.median(t) * 1e3


def compute_ms(url, model, send):
    for _ in range(5):
        send()
    ns0, c0 = stats(url, model)
    for _ in range(ITERS):
        send()
    ns1, c1 = stats(url, model)
    return (ns1 - ns0) / max(1, c1 - c0) / 1e6


def measure(url, root):
    dev = torch.device("cuda", 0)
    m = torch.jit.load(os.path.join(root, MODELS[PATHS[0]], "1", "model.pt"), map_location=dev).eval()
    print(f"card: {torch.cuda.get_device_name(0)}, torch {torch.__version__}; {ITERS} requests a cell, Triton's compute_infer mean per request")
    inp = out = None
    if "cudashm" in TRANSPORTS:
        try:
            top = max(BATCHES)
            inp = CudaRegion(url, "ts_adapter_in", top * 3 * 224 * 224 * 4)
            out = CudaRegion(url, "ts_adapter_out", top * 1000 * 4)
        except Exception as e:  # the HTTP cells still say what they measure
            print("cudashm: not measured:", e)
            inp = out = None
    rows = []
    print("batch  path       transport  forward ms  round trip ms  adapter ms  adapter/forward  adapter/round trip  vs numpy  max |diff|")
    try:
        for b in BATCHES:
            x = np.random.default_rng(b).standard_normal((b, 3, 224, 224)).astype(np.float32)
            xg = torch.from_numpy(x).to(dev)

            def forward():
                with torch.inference_mode():
                    m(xg)
                torch.cuda.synchronize()

            def round_trip():
                with torch.inference_mode():
                    return m(torch.from_numpy(x).to(dev)).cpu().numpy()

            for _ in range(5):
                forward()
            f = timed(forward, ITERS)
            r = timed(round_trip, ITERS)
            want = round_trip()
            if inp is not None:
                inp.write(x)
            base = {}
            for transport in TRANSPORTS:
                if transport == "cudashm" and inp is None:
                    continue
                for path in PATHS:
                    model = MODELS[path]
                    try:
                        if transport == "http":
                            a = compute_ms(url, model, lambda: infer_http(url, model, x))
                            got = infer_http(url, model, x)
                        else:
                            a = compute_ms(url, model, lambda: infer_cudashm(url, model, b, inp, out))
                            # This path's own answer, not one left in the region by the path before.
                            out.write(np.zeros((b, 1000), dtype=np.float32))
                            infer_cudashm(url, model, b, inp, out)
                            got = out.read(np.empty((b, 1000), dtype=np.float32))
                    except Exception as e:
                        print(f"{b:5d}  {path:9s}  {transport:9s}  failed: {e}")
                        continue
                    if path == "numpy":
                        base[transport] = a
                    vs = f"{a / base[transport]:8.2f}" if base.get(transport) else "       -"
                    diff = float(np.max(np.abs(got - want)))
                    print(f"{b:5d}  {path:9s}  {transport:9s}  {f:10.2f}  {r:13.2f}  {a:10.2f}  {a / f:15.2f}  {a / r:18.2f}  {vs}  {diff:.2e}")
                    rows.append({"batch": b, "path": path, "transport": transport, "forward_ms": f, "round_trip_ms": r,
                                 "adapter_ms": a, "max_abs_diff": diff})
    finally:
        for region in (inp, out):
            if region is not None:
                region.close()
    print("json:", json.dumps(rows))


def make_auto(root):
    torch.manual_seed(0)
    m = ResNet50().eval()
    d = os.path.join(root, "resnet50_ts_auto", "1")
    os.makedirs(d, exist_ok=True)
    with torch.no_grad():
        torch.jit.trace(m, torch.zeros(1, 3, 224, 224)).save(os.path.join(d, "model.pt"))
    with open(os.path.join(root, "resnet50_ts_auto", "config.pbtxt"), "w") as f:
        f.write(CONFIG.replace("kind: KIND_GPU", "kind: KIND_AUTO"))


def check(url, root):
    m = torch.jit.load(os.path.join(root, "resnet50_ts_auto", "1", "model.pt"), map_location="cpu").eval()
    x = np.random.default_rng(2).standard_normal((2, 3, 224, 224)).astype(np.float32)
    with torch.inference_mode():
        want = m(torch.from_numpy(x)).numpy()
    got = infer_http(url, "resnet50_ts_auto", x)
    diff = float(np.max(np.abs(got - want)))
    print(f"cpu check: resnet50_ts_auto batch 2 max |diff| {diff:.2e} against torch on the CPU: {'ok' if diff < 1e-3 else 'DIFFERS'}")
    return diff < 1e-3


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    elif sys.argv[1] == "make-auto":
        make_auto(sys.argv[2])
    elif sys.argv[1] == "check":
        sys.exit(0 if check(sys.argv[2], sys.argv[3]) else 1)
    else:
        measure(sys.argv[2], sys.argv[3])
