// The administration area's sections and who sees them; pure, so Vitest checks it.

export interface AdminSection {
  /** The path segment under /admin. */
  slug: string;
  title: string;
  /** The permission the section's API routes require. */
  permission: string;
}

/** In the order the navigation lists them. */
export const SECTIONS: readonly AdminSection[] = [
  { slug: "users", title: "Users", permission: "users.manage" },
  { slug: "tokens", title: "API tokens", permission: "users.manage" },
  { slug: "roles", title: "Roles", permission: "roles.manage" },
  { slug: "settings", title: "Settings", permission: "settings.manage" },
  { slug: "system", title: "System", permission: "settings.manage" },
  { slug: "audit", title: "Audit log", permission: "audit.view_any" },
  { slug: "notifications", title: "Notifications", permission: "settings.notifications" },
  { slug: "command-rules", title: "Command rules", permission: "sessions.command_rules" },
  { slug: "backup", title: "Backup and restore", permission: "settings.backup" },
];

/** The sections a holder of `permissions` sees (the others are not shown at all). */
export function visibleSections(permissions: readonly string[]): AdminSection[] {
  const held = new Set(permissions);
  return SECTIONS.filter((s) => held.has(s.permission));
}

/** The section an /admin path names ("/admin/users/..." -> users), or null. */
export function sectionOf(path: string): string | null {
  const parts = path.split("/").filter(Boolean);
  if (parts[0] !== "admin") return null;
  return parts[1] ?? "";
}
