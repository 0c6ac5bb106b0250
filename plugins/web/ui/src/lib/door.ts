// Whether this gateway has the SSH front door (the optional sshd pack) and where it listens.
import { api, call } from "../api/client";
import { ApiError } from "./errors";
import type { DoorHostKey, DoorInfo } from "./sshdoor";

/** The door's listener and host keys, as GET /sshd/host-keys answers. */
export interface Door extends DoorInfo {
  hostKeys: DoorHostKey[];
  /** The key the gateway presents for every connection reached by ProxyJump (`ssh -J`). */
  jumpHostKey: DoorHostKey | null;
}

let pending: Promise<Door | null> | null = null;

/**
 * The front door, or null when the sshd pack is not installed (its route answers 404).
 * Asked once per page load: the listener is fixed at the gateway's start-up.
 */
export function loadDoor(): Promise<Door | null> {
  // the document leaves each host key free-form (the sshd pack's own fields)
  pending ??= call(api.GET("/api/v1/sshd/host-keys")).then((door) => door as unknown as Door).catch((error: unknown) => {
    if (error instanceof ApiError && error.status === 404) return null;
    pending = null; // anything else is asked again next time
    throw error;
  });
  return pending;
}
