// Per-action rights as the app shows them (the gateway decides; this only hides what it would refuse).
import { ACTIONS, actionsFrom, type ActionName } from "./connectionform";

/** The role permission each action needs, besides the connection's switch. */
export const ACTION_PERMISSIONS: Record<ActionName, string> = {
  upload: "files.upload",
  download: "files.download",
  delete: "files.delete",
  copy: "clipboard.copy",
  paste: "clipboard.paste",
};

/** Effective rights: the connection allows the action AND the role holds its permission. */
export function allowedActions(stored: Partial<Record<string, boolean>> | null | undefined, permissions: readonly string[]): Record<ActionName, boolean> {
  const switches = actionsFrom(stored);
  const allowed = {} as Record<ActionName, boolean>;
  for (const { name } of ACTIONS) allowed[name] = switches[name] && permissions.includes(ACTION_PERMISSIONS[name]);
  return allowed;
}

/** "uploads and deletions": what is off, for a sentence, or "" when nothing is. */
export function deniedSentence(allowed: Record<ActionName, boolean>, names: readonly ActionName[]): string {
  const words: Record<ActionName, string> = { upload: "uploads", download: "downloads", delete: "deletions", copy: "copying", paste: "pasting" };
  const off = names.filter((n) => !allowed[n]).map((n) => words[n]);
  if (off.length <= 1) return off.join("");
  return `${off.slice(0, -1).join(", ")} and ${off[off.length - 1]}`;
}
