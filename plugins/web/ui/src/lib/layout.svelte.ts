// Whether the connection sidebar shows beside the screen (wider than a phone; on a phone
// it is a drawer the top bar opens). The administration screens start without it; elsewhere
// folding it (to give a terminal the room) is remembered in this browser (localStorage).
const KEY = "hostgate.sidebar";

function storedFolded(): boolean {
  try {
    return localStorage.getItem(KEY) === "folded";
  } catch {
    return false; // storage refused: shown
  }
}

export const layout = $state({
  /** Folded outside the administration screens (remembered). */
  folded: storedFolded(),
  /** Shown on the administration screens (for this page only: they start without it). */
  adminShown: false,
});

/** Whether a path is one of the administration screens. */
export function isAdminPath(path: string): boolean {
  return path === "/admin" || path.startsWith("/admin/");
}

/** Whether the sidebar shows beside the screen at this path (wide layout). */
export function sidebarShown(path: string): boolean {
  return isAdminPath(path) ? layout.adminShown : !layout.folded;
}

/** Fold or unfold the sidebar for the screens like this one. */
export function toggleSidebar(path: string): void {
  if (isAdminPath(path)) {
    layout.adminShown = !layout.adminShown;
    return;
  }
  layout.folded = !layout.folded;
  try {
    if (layout.folded) localStorage.setItem(KEY, "folded");
    else localStorage.removeItem(KEY);
  } catch {
    // not remembered, still folded
  }
}
