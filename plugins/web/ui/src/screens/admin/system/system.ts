// The system screen's logic without markup: what a pack adds, said in words.
import { plainOsErrors } from "../../../lib/oserror";
import type { PackInfo } from "../types";

const KINDS: Record<string, [string, string]> = {
  protocols: ["protocol", "protocols"],
  login_methods: ["login method", "login methods"],
  channels: ["notification channel", "notification channels"],
  settings: ["setting", "settings"],
  permissions: ["permission", "permissions"],
  pages: ["page", "pages"],
  blueprints: ["API routes", "API routes"],
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

// the outbound reason codes the update check reports after "could not reach the release feed: "
const FEED_REASONS: Record<string, string> = {
  target_denied: "The gateway's network policy refused the release feed's address: its host is not on the allow list, or it is protected or denied.",
  remote_unreachable: "No answer from the release feed's host.",
  remote_timeout: "The release feed's host did not answer in time.",
  remote_error: "The release feed's host refused or dropped the connection.",
};

/** Why the update check failed, in words (the server's text ends with a reason code when it has one). */
export function describeFetchError(text: string): { message: string; policy: boolean } {
  const code = /:\s*([a-z_]+)\s*$/.exec(text)?.[1] ?? "";
  if (Object.hasOwn(FEED_REASONS, code)) return { message: FEED_REASONS[code], policy: code === "target_denied" };
  const plain = plainOsErrors(text);
  const sentence = plain.charAt(0).toUpperCase() + plain.slice(1);
  return { message: sentence.endsWith(".") ? sentence : `${sentence}.`, policy: false };
}
