// The live channel's frames and retries (liveevents.svelte.ts), pure so Vitest checks them.

/** The events socket's URL on this origin. */
export function eventsUrl(origin: { protocol: string; host: string }, ticket: string): string {
  const scheme = origin.protocol === "https:" ? "wss" : "ws";
  return `${scheme}://${origin.host}/ws/events?${new URLSearchParams({ ticket })}`;
}

/** A frame of the events socket: "ready", the topic that changed, or null (anything else). */
export function parseLiveFrame(text: string): string | null {
  try {
    const frame = JSON.parse(text) as { type?: unknown; topic?: unknown };
    if (frame?.type === "ready") return "ready";
    if (frame?.type === "changed" && typeof frame.topic === "string") return frame.topic;
  } catch {
    // not JSON
  }
  return null;
}

/**
 * When to open the events socket again after it closed with `code` (ms), or null: never
 * (4001, the sign-in ended: the app goes to sign-in by itself). Backs off to a minute.
 */
export function liveRetryDelay(code: number, attempt: number): number | null {
  if (code === 4001) return null;
  return Math.min(60_000, 1000 * 2 ** Math.min(attempt, 6));
}
