"""How fast can one resnet50_fp16 execute() turn 64 requests' arrays into 64 answers? Compares host
paths for the same network, outside Triton, from 64 separate float32 arrays as the python backend
hands them over (one per request), and with 1-3 processes at once as 1-3 instances would run.

  concat    the old model: np.concatenate, np.isfinite on the CPU, pageable copy, fp16 on the GPU
  pinned    each request copied once into a reused pinned buffer, async copy, checks on the GPU
  pinned-t  as pinned, but the host copy done by torch (several threads)
  direct    each request copied straight from its own (pageable) array to the GPU
  model     the model's own _forward (pinned, parallel copies: models/resnet50_fp16/1/model.py)

usage: python3 bench/gpu/host-path.py [--batches 40] [--procs 1,2,3]
"""

import argparse
import importlib.util
import multiprocessing as mp
import sys
import time
import types

import numpy as np

B = 64


def load_model_module():
    sys.modules.setdefault("triton_python_backend_utils", types.ModuleType("triton_python_backend_utils"))
    spec = importlib.util.spec_from_file_location("resnet_model", "models/resnet50_fp16/1/model.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def worker(variant, batches, q, start_evt):
    import torch

    torch.manual_seed(50)
    mod = load_model_module()
    dev = torch.device("cuda:0")
    net = mod._build_resnet50(torch).eval().to(dev, dtype=torch.float16, memory_format=torch.channels_last)
    arrays = [np.random.default_rng(i).standard_normal((1, 3, 224, 224), dtype=np.float32) for i in range(B)]
    pin_in = torch.empty((B, 3, 224, 224), dtype=torch.float32, pin_memory=True)
    pin_in_np = pin_in.numpy()
    pin_out = torch.empty((B, 1000), dtype=torch.float32, pin_memory=True)

    if variant == "model":
        m = mod.TritonPythonModel()
        m.initialize({"model_instance_kind": "GPU", "model_instance_device_id": "0"})

    def run_once():
        if variant == "model":
            outs, ok = m._forward(arrays)
            assert all(ok)
            return outs
        with torch.inference_mode():
            if variant == "concat":
                for a in arrays:
                    assert np.isfinite(a).all()
                batch = np.ascontiguousarray(np.concatenate(arrays, axis=0), dtype=np.float32)
                x = torch.from_numpy(batch).to(dev)
                x = x.to(dtype=torch.float16, memory_format=torch.channels_last)
                return torch.softmax(net(x).float(), dim=1).cpu().numpy()
            if variant in ("pinned", "pinned-t"):
                off = 0
                for a in arrays:
                    n = a.shape[0]
                    if variant == "pinned":
                        pin_in_np[off : off + n] = a
                    else:
                        pin_in[off : off + n].copy_(torch.from_numpy(a))
                    off += n
                x = pin_in[:off].to(dev, non_blocking=True)
            else:
                x = torch.cat([torch.from_numpy(a).to(dev, non_blocking=False) for a in arrays])
            ok = torch.isfinite(x).flatten(1).all(1)
            x = x.to(dtype=torch.float16, memory_format=torch.channels_last)
            probs = torch.softmax(net(x).float(), dim=1)
            pin_out[: probs.shape[0]].copy_(probs, non_blocking=True)
            okc = ok.cpu()
            torch.cuda.current_stream().synchronize()
            assert bool(okc.all())
            return pin_out[: probs.shape[0]].numpy().copy()

    for _ in range(5):
        run_once()
    torch.cuda.synchronize()
    q.put("ready")
    start_evt.wait()
    t0 = time.perf_counter()
    for _ in range(batches):
        run_once()
    q.put(time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=40)
    ap.add_argument("--procs", default="1,2,3")
    ap.add_argument("--variants", default="concat,pinned,direct,model")
    a = ap.parse_args()
    ctx = mp.get_context("spawn")
    print(f"{'variant':>9} {'procs':>5} {'images/s':>9} {'ms per batch of 64 (per proc)':>30}")
    for variant in a.variants.split(","):
        for procs in (int(p) for p in a.procs.split(",")):
            q, start = ctx.Queue(), ctx.Event()
            ps = [ctx.Process(target=worker, args=(variant, a.batches, q, start)) for _ in range(procs)]
            for p in ps:
                p.start()
            for _ in ps:
                assert q.get() == "ready"
            t0 = time.perf_counter()
            start.set()
            secs = [q.get() for _ in ps]
            wall = time.perf_counter() - t0
            for p in ps:
                p.join()
            imgs = procs * a.batches * B / wall
            print(f"{variant:>9} {procs:>5} {imgs:>9.0f} {1000 * max(secs) / a.batches:>30.2f}", flush=True)


if __name__ == "__main__":
    main()
