// Access requests (connections that need approval): the wire shape and its words.
import type { components } from "../api/schema";

/** One access request (GET /access-requests), as the gateway's document types it. */
export type AccessRequest = components["schemas"]["AccessRequestRecord"];

export const DURATIONS = [
  [30, "30 minutes"],
  [60, "1 hour"],
  [240, "4 hours"],
  [480, "8 hours"],
  [1440, "1 day"],
] as const;

/** How long, in words: "90 minutes" -> "1 h 30 min". */
export function duration(minutes: number): string {
  const hours = Math.floor(minutes / 60);
  const rest = minutes % 60;
  if (!hours) return `${rest} min`;
  return rest ? `${hours} h ${rest} min` : `${hours} h`;
}

/** Whether an approved request still grants access at `now`. */
export function running(request: AccessRequest, now: Date = new Date()): boolean {
  return request.status === "approved" && request.endsAt !== null && new Date(request.endsAt) > now;
}
