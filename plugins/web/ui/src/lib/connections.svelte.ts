// The caller's connections (GET /connections) and the loaded protocols (GET /protocols).
import { api, call } from "../api/client";
import type { ConnectionListing, Protocol } from "../api/types";
import { describeError } from "./errors";

export const connections = $state({
  listing: null as ConnectionListing | null,
  protocols: [] as Protocol[],
  error: "",
});

/** Load (or reload) the tree; errors land in `connections.error`. */
export async function reloadConnections(): Promise<void> {
  try {
    connections.listing = await call<ConnectionListing>(api.GET("/api/v1/connections"));
    connections.error = "";
  } catch (error) {
    connections.error = describeError(error);
  }
}

/** Load the protocol descriptors once. */
export async function loadProtocols(): Promise<Protocol[]> {
  if (!connections.protocols.length) {
    const body = await call<{ protocols: Protocol[] }>(api.GET("/api/v1/protocols"));
    connections.protocols = body.protocols;
  }
  return connections.protocols;
}
