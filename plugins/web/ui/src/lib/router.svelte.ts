// Client-side routes on the History API: deep links and reloads land where they were.

/** The current location, reactive. */
export const location = $state({ path: window.location.pathname, search: window.location.search });

function sync(): void {
  location.path = window.location.pathname;
  location.search = window.location.search;
}

window.addEventListener("popstate", sync);

/** Go to an app path (adds a history entry unless `replace`). */
export function navigate(path: string, replace = false): void {
  if (replace) history.replaceState(null, "", path);
  else history.pushState(null, "", path);
  sync();
}

export { match } from "./paths";

// Same-origin links (<a href="/...">) move inside the app instead of reloading the page.
document.addEventListener("click", (event) => {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const anchor = (event.target as Element | null)?.closest?.("a");
  if (!anchor || anchor.target || anchor.hasAttribute("download") || anchor.origin !== window.location.origin) return;
  if (anchor.pathname.startsWith("/api/") || anchor.pathname.startsWith("/ws/")) return;
  event.preventDefault();
  navigate(anchor.pathname + anchor.search + anchor.hash); // the screen scrolls to a #part it names
});
