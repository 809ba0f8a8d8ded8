import type * as grpc from "@grpc/grpc-js";

const id = (b: Buffer) => b;

/**
 * Triton's ModelStreamInfer as a raw-bytes grpc-js service: a test server answers on the path our
 * stream client calls and encodes its own responses.
 */
export const MODEL_STREAM_INFER_SERVICE: grpc.ServiceDefinition = {
  ModelStreamInfer: {
    path: "/inference.GRPCInferenceService/ModelStreamInfer",
    requestStream: true,
    responseStream: true,
    requestSerialize: id,
    requestDeserialize: id,
    responseSerialize: id,
    responseDeserialize: id,
  },
};
