/**
 * The protocols perf and tune speak to Triton (`-i`). Named here once, in a module that imports
 * nothing, so that the command definitions can offer them without loading a client; what each
 * one means (port, clients, transports, streaming, shared memory) is perf/protocol-descriptor.ts.
 */
export const PROTOCOLS = ["http", "grpc"] as const;

export type Protocol = (typeof PROTOCOLS)[number];
