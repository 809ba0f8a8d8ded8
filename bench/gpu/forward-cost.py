"""Where the time of one resnet50_fp16 call goes, outside Triton: the GPU forward alone (input
already on the GPU) against the model's whole _forward from one numpy array per request (copies
into pinned memory, host-to-device copy, finiteness check, fp16 cast, forward, softmax, copy
back). The batch-64 forward is the GPU's ceiling that perf results are measured against.

usage: python3 bench/gpu/forward-cost.py
"""

import importlib.util
import sys
import time
import types

import numpy as np
import torch

# model.py imports Triton's utilities at module level; only its network code is used here.
sys.modules.setdefault("triton_python_backend_utils", types.ModuleType("triton_python_backend_utils"))
spec = importlib.util.spec_from_file_location("resnet_model", "models/resnet50_fp16/1/model.py")
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)

m = mod.TritonPythonModel()
m.initialize({"model_instance_kind": "GPU", "model_instance_device_id": "0"})
dev = m.device
print(f"{'batch':>5} {'gpu forward ms':>15} {'whole _forward ms':>18} {'per image ms':>13}")
for b in (1, 8, 16, 32, 64):
    x = np.random.default_rng(0).standard_normal((b, 3, 224, 224), dtype=np.float32)
    xg = torch.from_numpy(x).to(dev).to(dtype=torch.float16, memory_format=torch.channels_last)
    with torch.inference_mode():
        for _ in range(3):
            m.net(xg)
        torch.cuda.synchronize(dev)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(20):
            m.net(xg)
        end.record()
        torch.cuda.synchronize(dev)
        gpu_ms = start.elapsed_time(end) / 20
    parts = [x[i : i + 1] for i in range(b)]
    t0 = time.perf_counter()
    for _ in range(10):
        m._forward(parts)
    whole_ms = (time.perf_counter() - t0) * 1000 / 10
    print(f"{b:>5} {gpu_ms:>15.2f} {whole_ms:>18.2f} {whole_ms / b:>13.2f}")
    if b == 64:
        ceiling = 64 / gpu_ms * 1000
print(f"batch-64 GPU forward ceiling: {ceiling:.0f} images/s (50%: {ceiling / 2:.0f})")
