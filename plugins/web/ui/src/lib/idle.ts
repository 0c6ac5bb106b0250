// The idle timeout (security.idle_timeout_minutes): the server ends an unused session;
// the app checks with ?heartbeat=1 (which does not count as activity) on a timer and
// when the tab comes back, so the browser shows the sign-in screen with a notice.
import { api, call } from "../api/client";

/** How often to check, in ms, for a timeout of `minutes` (0 = never). */
export function checkInterval(minutes: number): number | null {
  if (!(minutes > 0)) return null;
  return Math.min(60_000, Math.max(5_000, (minutes * 60_000) / 4));
}

async function heartbeat(): Promise<void> {
  try {
    await call(api.GET("/api/v1/auth/me", { params: { query: { heartbeat: "1" } as never } }));
  } catch {
    // a 401 already signed the app out (client.ts); other failures wait for the next check
  }
}

/** Start watching; returns the function that stops it. */
export function watchIdle(minutes: number): () => void {
  const interval = checkInterval(minutes);
  if (interval === null) return () => {};
  const timer = window.setInterval(heartbeat, interval);
  const onVisible = () => {
    if (document.visibilityState === "visible") void heartbeat();
  };
  window.addEventListener("focus", onVisible);
  document.addEventListener("visibilitychange", onVisible);
  return () => {
    window.clearInterval(timer);
    window.removeEventListener("focus", onVisible);
    document.removeEventListener("visibilitychange", onVisible);
  };
}
