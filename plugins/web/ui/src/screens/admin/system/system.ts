// The system screen's logic without markup: what a pack adds, said in words.
import type { PackInfo } from "../types";

const KINDS: Record<string, [string, string]> = {
  protocols: ["protocol", "protocols"],
  login_methods: ["login method", "login methods"],
  channels: ["notification channel", "notification channels"],
  settings: ["setting", "settings"],
  permissions: ["permission", "permissions"],
  pages: ["page", "pages"],
};

/** "protocols ssh, sftp · 3 settings · 2 permissions": named kinds by name, the rest counted. */
export function describeProvides(pack: Pick<PackInfo, "provides">): string {
  const byKind = new Map<string, string[]>();
  for (const item of pack.provides) {
    const [kind, name] = [item.slice(0, item.indexOf(":")), item.slice(item.indexOf(":") + 1)];
    byKind.set(kind, [...(byKind.get(kind) ?? []), name]);
  }
  const parts: string[] = [];
  for (const [kind, names] of byKind) {
    const [one, many] = KINDS[kind] ?? [kind, kind];
    if (kind === "settings" || kind === "permissions") parts.push(`${names.length} ${names.length === 1 ? one : many}`);
    else parts.push(`${names.length === 1 ? one : many} ${names.join(", ")}`);
  }
  return parts.join(" · ") || "nothing yet";
}
