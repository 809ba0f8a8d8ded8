"""Where the time of one resnet50_fp16 call goes, outside Triton, per batch size:

  original forward   the network as first written (BatchNorms, eager PyTorch), input on the GPU
  served forward     what the model runs: BatchNorms folded, one CUDA graph replay, input on the GPU
  whole _forward     the model's _forward from one numpy array per request (copies into pinned
                     memory, host-to-device copy, finiteness check, fp16 cast, forward, softmax,
                     copy back)

The batch-64 served forward is the GPU ceiling that perf results are measured against (the
strictest of the two: the fastest the GPU does the work).

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
torch.manual_seed(mod.SEED)
original = mod._build_resnet50(torch).eval().to(dev, dtype=torch.float16, memory_format=torch.channels_last)


def gpu_ms(fn, reps=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize(dev)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    torch.cuda.synchronize(dev)
    return start.elapsed_time(end) / reps


print(f"{'batch':>5} {'original forward ms':>20} {'served forward ms':>18} {'whole _forward ms':>18} {'per image ms':>13}")
ceiling = None
for b in (1, 8, 16, 32, 64):
    x = np.random.default_rng(0).standard_normal((b, 3, 224, 224), dtype=np.float32)
    xg = torch.from_numpy(x).to(dev).to(dtype=torch.float16, memory_format=torch.channels_last)
    with torch.inference_mode():
        orig_ms = gpu_ms(lambda: original(xg))
        graph = m._graph(b)
        served_ms = gpu_ms(graph[0].replay) if graph is not None else gpu_ms(lambda: m.net(xg))
    parts = [x[i : i + 1] for i in range(b)]
    t0 = time.perf_counter()
    for _ in range(10):
        m._forward(parts)
    whole_ms = (time.perf_counter() - t0) * 1000 / 10
    print(f"{b:>5} {orig_ms:>20.2f} {served_ms:>18.2f} {whole_ms:>18.2f} {whole_ms / b:>13.2f}")
    if b == 64:
        ceiling = 64 / served_ms * 1000
        original_ceiling = 64 / orig_ms * 1000
# The served path must compute what the original network does (folding is exact up to fp16).
x = np.random.default_rng(1).standard_normal((16, 3, 224, 224), dtype=np.float32)
with torch.inference_mode():
    xg = torch.from_numpy(x).to(dev).to(dtype=torch.float16, memory_format=torch.channels_last)
    want = torch.softmax(original(xg).float(), dim=1).cpu().numpy()
got = np.concatenate(m._forward([x[i : i + 1] for i in range(16)])[0])
print(f"served vs original probabilities: max abs diff {np.abs(got - want).max():.2e}, same top-1 for {int((got.argmax(1) == want.argmax(1)).sum())}/16")
print(f"graphs: {'on' if m._use_graphs else 'off (capture failed)'}")
print(f"batch-64 GPU ceiling: {ceiling:.0f} images/s served forward (50%: {ceiling / 2:.0f}); original forward {original_ceiling:.0f}")
