"""TorchScript ResNet-50 through the local runtime's adapter (Triton's python backend running PyTorch,
reload/adapters/) against torch's own forward of the same module on the same card, per batch size.

  make DIR        write DIR/resnet50_ts (model.pt traced from fixed-seed weights, the article's
                  pytorch_libtorch config, one KIND_GPU instance)
  measure URL DIR for each batch: torch forward alone (input on the GPU), torch from a numpy array
                  (host to device, forward, back: what the adapter does per request), and Triton's
                  compute_infer per request (/v2/models/resnet50_ts/stats: the python backend's
                  hand-over, the adapter, the same forward), requests sent with the binary tensor
                  extension; prints the ratios adapter / forward and adapter / numpy round trip,
                  and checks the adapter's answer equals torch's

ResNet-50 is written out here (torchvision is not needed on the GPU machine).
"""

import json
import os
import statistics
import sys
import time
import urllib.request

import numpy as np
import torch
import torch.nn as nn

BATCHES = [int(b) for b in os.environ.get("BATCHES", "1,8,32").split(",")]
ITERS = int(os.environ.get("ITERS", "50"))


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


def make(root):
    torch.manual_seed(0)
    m = ResNet50().eval()
    d = os.path.join(root, "resnet50_ts", "1")
    os.makedirs(d, exist_ok=True)
    with torch.no_grad():
        torch.jit.trace(m, torch.zeros(1, 3, 224, 224)).save(os.path.join(d, "model.pt"))
    with open(os.path.join(root, "resnet50_ts", "config.pbtxt"), "w") as f:
        f.write(CONFIG)


def infer(url, x):
    header = json.dumps({
        "inputs": [{"name": "INPUT__0", "shape": list(x.shape), "datatype": "FP32", "parameters": {"binary_data_size": x.nbytes}}],
        "outputs": [{"name": "OUTPUT__0", "parameters": {"binary_data": True}}],
    }).encode()
    req = urllib.request.Request(url + "/v2/models/resnet50_ts/infer", data=header + x.tobytes(), method="POST")
    req.add_header("Inference-Header-Content-Length", str(len(header)))
    req.add_header("Content-Type", "application/octet-stream")
    with urllib.request.urlopen(req) as r:
        body = r.read()
        n = int(r.headers["Inference-Header-Content-Length"])
    return np.frombuffer(body[n:], dtype=np.float32).reshape(x.shape[0], 1000)


def stats(url):
    s = json.load(urllib.request.urlopen(url + "/v2/models/resnet50_ts/stats"))["model_stats"][0]["inference_stats"]
    return s["compute_infer"]["ns"], s["compute_infer"]["count"]


def timed(fn, n):
    t = []
    for _ in range(n):
        a = time.perf_counter()
        fn()
        t.append(time.perf_counter() - a)
    return statistics.median(t) * 1e3


def measure(url, root):
    dev = torch.device("cuda", 0)
    m = torch.jit.load(os.path.join(root, "resnet50_ts", "1", "model.pt"), map_location=dev).eval()
    print(f"card: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    print("batch  forward ms  numpy round trip ms  adapter compute ms  adapter/forward  adapter/round trip  max |diff|")
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
            infer(url, x)
        f = timed(forward, ITERS)
        r = timed(round_trip, ITERS)
        ns0, c0 = stats(url)
        for _ in range(ITERS):
            got = infer(url, x)
        ns1, c1 = stats(url)
        a = (ns1 - ns0) / max(1, c1 - c0) / 1e6
        diff = float(np.max(np.abs(got - round_trip())))
        print(f"{b:5d}  {f:10.2f}  {r:19.2f}  {a:18.2f}  {a / f:15.2f}  {a / r:18.2f}  {diff:.2e}")


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        measure(sys.argv[2], sys.argv[3])
