"""Requests to a running Triton through NVIDIA's own tritonclient, for the integration tests.

Run with the tests' own Python (test/helpers/test-tools.ts); test/helpers/tritonclient.ts writes
the calls as JSON on stdin and reads one JSON result per call from stdout. A call is
  {"kind": "infer", "protocol": "http" | "grpc", "model", "version"?, "inputs", "outputs"?}
or
  {"kind": "streams", "streams": [{"model", "id", "inputs"}, ...]}
(each stream on a gRPC client of its own, all at once, each waiting for its final response).
An input is {"name", "datatype", "shape", "data"}; data is flat, in row-major order. What fails
is answered as {"error": "...", "status": ...} (the HTTP status or gRPC code) so the test decides what it means.
"""

import json
import sys
import threading

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException, triton_to_np_dtype

# Bounded: a stream whose final response never comes fails the call instead of hanging the test.
STREAM_TIMEOUT_S = 30


def encode(module, spec):
    arr = np.array(spec["data"], dtype=triton_to_np_dtype(spec["datatype"])).reshape(spec["shape"])
    t = module.InferInput(spec["name"], list(arr.shape), spec["datatype"])
    t.set_data_from_numpy(arr)
    return t


def outputs_of(result, names):
    out = {}
    for name in names:
        arr = result.as_numpy(name)
        if arr is None:
            continue
        data = arr.reshape(-1).tolist()
        # BYTES come back as bytes, which JSON has no form for: as text.
        data = [x.decode("utf-8", "replace") if isinstance(x, bytes) else x for x in data]
        out[name] = {"shape": list(arr.shape), "data": data}
    return out


def output_names(result, protocol):
    if protocol == "http":
        return [o["name"] for o in result.get_response().get("outputs", [])]
    return [o.name for o in result.get_response().outputs]


def infer(call, urls):
    protocol = call["protocol"]
    module = httpclient if protocol == "http" else grpcclient
    client = module.InferenceServerClient(url=urls[protocol])
    try:
        inputs = [encode(module, i) for i in call["inputs"]]
        outputs = [module.InferRequestedOutput(n) for n in call["outputs"]] if call.get("outputs") else None
        result = client.infer(call["model"], inputs, model_version=str(call.get("version", "")), outputs=outputs)
        return {"outputs": outputs_of(result, output_names(result, protocol))}
    except InferenceServerException as e:
        return {"error": e.message() or str(e), "status": e.status()}
    finally:
        client.close()


def stream(spec, urls, into):
    client = grpcclient.InferenceServerClient(url=urls["grpc"])
    got = []
    done = threading.Event()

    def on_response(result, error):
        if error is not None:
            got.append({"error": error.message() if isinstance(error, InferenceServerException) else str(error)})
            done.set()
            return
        response = result.get_response()
        final = response.parameters["triton_final_response"].bool_param
        got.append({"id": response.id, "final": final, "outputs": outputs_of(result, output_names(result, "grpc"))})
        if final:
            done.set()

    try:
        client.start_stream(callback=on_response)
        inputs = [encode(grpcclient, i) for i in spec["inputs"]]
        # Without the empty final response Triton sends nothing for the final flag alone.
        client.async_stream_infer(spec["model"], inputs, request_id=spec["id"], enable_empty_final_response=True)
        if not done.wait(STREAM_TIMEOUT_S):
            got.append({"error": f"no final response within {STREAM_TIMEOUT_S} s"})
    finally:
        client.stop_stream()
        client.close()
    into.append(got)


def streams(call, urls):
    results = [[] for _ in call["streams"]]
    threads = [
        threading.Thread(target=stream, args=(spec, urls, results[i])) for i, spec in enumerate(call["streams"])
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(STREAM_TIMEOUT_S + 5)
    return {"streams": [r[0] if r else [{"error": "stream thread did not finish"}] for r in results]}


def main():
    spec = json.load(sys.stdin)
    urls = {"http": spec["http"], "grpc": spec["grpc"]}
    answers = [infer(c, urls) if c["kind"] == "infer" else streams(c, urls) for c in spec["calls"]]
    json.dump(answers, sys.stdout)


main()
