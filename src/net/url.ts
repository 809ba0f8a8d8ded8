/** A host as it goes into a URL: IPv6 addresses in brackets. */
export function urlHost(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}

/** A server's three endpoints as `host:port`, the form status lines and the dashboard show. */
export function endpointsFor(
  host: string,
  ports: { http: number; grpc: number; metrics: number },
): { http: string; grpc: string; metrics: string } {
  return { http: `${host}:${ports.http}`, grpc: `${host}:${ports.grpc}`, metrics: `${host}:${ports.metrics}` };
}
