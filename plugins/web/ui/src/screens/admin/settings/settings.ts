// The settings screen's logic without markup: groups, labels, hints, what to send, and
// which field a refusal is about. The registry (GET /settings/schema) drives all of it, so
// a pack's settings appear without an app change.
import type { SettingInfo } from "../types";
import { groupTitle } from "../roles/roles";

/** The value the API masks a stored secret with (GET /settings). */
export const SECRET_MASK = "••••••••";

/** Titles of the kernel's groups, in the order the screen lists them. */
const KNOWN_GROUPS: [string, string][] = [
  ["app", "Branding"],
  ["auth", "Sign-in"],
  ["auth.ldap", "LDAP directory"],
  ["auth.oidc", "Single sign-on (OIDC)"],
  ["security", "Security"],
  ["security.passkey", "Passkeys"],
  ["recordings", "Recordings"],
  ["ssh", "Terminal defaults"],
  ["network", "Network access"],
  ["notifications", "Notifications"],
  ["health_monitor", "Connection health"],
  ["sshd", "SSH front door"],
  ["updates", "Updates"],
  ["system", "System"],
];

export interface SettingGroup {
  id: string;
  title: string;
  settings: SettingInfo[];
}

/** "auth.ldap" -> "LDAP directory"; a pack's group "widgets.colour" -> "Widgets colour". */
export function titleOf(group: string): string {
  return KNOWN_GROUPS.find(([id]) => id === group)?.[1] ?? groupTitle(group);
}

/** The registry by group: the kernel's groups first in their order, then packs' by title. */
export function groupSettings(settings: readonly SettingInfo[]): SettingGroup[] {
  const byGroup = new Map<string, SettingInfo[]>();
  for (const setting of settings) {
    const list = byGroup.get(setting.group) ?? [];
    list.push(setting);
    byGroup.set(setting.group, list);
  }
  const rank = (id: string) => {
    const i = KNOWN_GROUPS.findIndex(([known]) => known === id);
    return i === -1 ? KNOWN_GROUPS.length : i;
  };
  // the switch that turns a group on comes first ("auth.ldap_enabled"), then the rest by key
  const switchFirst = (a: SettingInfo, b: SettingInfo) =>
    Number(!/(^|[._])enabled$/.test(a.key)) - Number(!/(^|[._])enabled$/.test(b.key)) || a.key.localeCompare(b.key);
  return [...byGroup.entries()]
    .map(([id, list]) => ({ id, title: titleOf(id), settings: [...list].sort(switchFirst) }))
    .sort((a, b) => rank(a.id) - rank(b.id) || a.title.localeCompare(b.title));
}

const WORDS: Record<string, string> = {
  dn: "DN",
  url: "URL",
  uri: "URI",
  tls: "TLS",
  ca: "CA",
  id: "ID",
  oidc: "OIDC",
  ldap: "LDAP",
  mfa: "two-step verification",
  ssh: "SSH",
  rp: "RP",
  starttls: "StartTLS",
  attr: "attribute",
  cert: "certificate",
};
const UNITS: Record<string, string> = { mb: "MB", minutes: "minutes", days: "days", seconds: "seconds" };

/** A field label from the key, without its group: "auth.ldap_bind_dn" -> "Bind DN". */
export function labelOf(setting: Pick<SettingInfo, "key" | "group">): string {
  let rest = setting.key;
  if (rest.startsWith(`${setting.group}_`)) rest = rest.slice(setting.group.length + 1);
  else if (rest.startsWith(`${setting.group}.`)) rest = rest.slice(setting.group.length + 1);
  else rest = rest.slice(rest.indexOf(".") + 1);
  const words = rest.split(/[._]+/).filter(Boolean);
  let unit = "";
  if (words.length > 1 && UNITS[words[words.length - 1]]) unit = UNITS[words.pop() as string];
  const text = words.map((w) => WORDS[w] ?? w).join(" ");
  const label = text.charAt(0).toUpperCase() + text.slice(1);
  return unit ? `${label} (${unit})` : label;
}

function number(value: number): string {
  return Number.isInteger(value) ? String(value) : String(value);
}

/**
 * A description with the other settings it names ("wins over network.allow") written as their
 * labels, as the screen shows them ("wins over “Allow”"; "“Protected” under Network access"
 * when the setting is in another group than `group`).
 */
export function withLabels(text: string, known: readonly SettingInfo[], group = ""): string {
  const byKey = new Map(known.map((s) => [s.key, s]));
  return text.replace(/\b[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)+\b/g, (key) => {
    const setting = byKey.get(key);
    if (!setting) return key;
    const label = `“${labelOf(setting)}”`;
    return setting.group === group ? label : `${label} under ${titleOf(setting.group)}`;
  });
}

/** The help under a field: the registry's description (settings it names by their labels,
 * from `known`), then the bounds and the default. */
export function hintOf(setting: SettingInfo, known: readonly SettingInfo[] = []): string {
  const parts: string[] = [];
  if (setting.description) parts.push(withLabels(setting.description, known, setting.group).replace(/\.?$/, "."));
  const { minimum: min, maximum: max } = setting;
  if (min !== null && max !== null) parts.push(`From ${number(min)} to ${number(max)}.`);
  else if (min !== null) parts.push(`At least ${number(min)}.`);
  else if (max !== null) parts.push(`At most ${number(max)}.`);
  if (!setting.secret && setting.type !== "boolean" && setting.default !== null && setting.default !== "" && !setting.choices) {
    parts.push(`Default: ${String(setting.default)}.`);
  }
  return parts.join(" ");
}

/** The control a setting gets. */
export type Control = "checkbox" | "select" | "number" | "secret" | "textarea" | "text" | "logo" | "readonly";

export function controlOf(setting: SettingInfo): Control {
  if (setting.readonly) return "readonly";
  if (setting.key === "app.logo") return "logo";
  if (setting.type === "boolean") return "checkbox";
  if (setting.choices) return "select";
  if (setting.type === "integer" || setting.type === "number") return "number";
  if (setting.secret) return "secret";
  if ((setting.maxLength ?? 0) > 4096) return "textarea";
  return "text";
}

/** What a form field holds for a stored value (inputs hold strings; secrets start untouched). */
export function formValue(setting: SettingInfo, stored: unknown): unknown {
  switch (controlOf(setting)) {
    case "checkbox":
      return Boolean(stored);
    case "secret":
      return undefined;
    case "logo":
      return stored ?? null;
    default:
      return stored === null || stored === undefined ? "" : String(stored);
  }
}

/**
 * The value to send for a form field: numbers typed as text become numbers (what is not a
 * number is sent as typed, so the server says why it refuses); an empty nullable field is
 * null; a secret left alone is not sent at all (undefined).
 */
export function wireValue(setting: SettingInfo, value: unknown): unknown {
  const control = controlOf(setting);
  if (control === "secret") return value;
  if (control === "checkbox") return Boolean(value);
  if (control === "logo") return value === "" ? null : value;
  const text = String(value ?? "");
  if (text.trim() === "" && setting.nullable) return null;
  if (control === "number") {
    const trimmed = text.trim();
    return trimmed !== "" && Number.isFinite(Number(trimmed)) ? Number(trimmed) : text;
  }
  if (control === "select" && setting.type !== "string") {
    const found = (setting.choices ?? []).find((c) => String(c) === text);
    return found ?? text;
  }
  return text;
}

/** The changes to send: every field whose value differs from the stored one. */
export function changesOf(settings: readonly SettingInfo[], stored: Record<string, unknown>, form: Record<string, unknown>): Record<string, unknown> {
  const changes: Record<string, unknown> = {};
  for (const setting of settings) {
    if (setting.readonly) continue;
    const value = wireValue(setting, form[setting.key]);
    if (controlOf(setting) === "secret") {
      if (value !== undefined) changes[setting.key] = value;
      continue;
    }
    if (value !== stored[setting.key]) changes[setting.key] = value;
  }
  return changes;
}

/**
 * Which setting a refusal is about, and the sentence to show beside it: the server names
 * the key first ("security.max_login_attempts must be at least 1", "network.allow: ...").
 */
export function settingError(message: string, keys: readonly string[]): { key: string; message: string } | null {
  const text = message.trim();
  const key = [...keys].sort((a, b) => b.length - a.length).find((k) => text.startsWith(`${k} `) || text.startsWith(`${k}:`));
  if (!key) return null;
  const rest = text.slice(key.length).replace(/^[:\s]+/, "");
  const sentence = rest.charAt(0).toUpperCase() + rest.slice(1);
  return { key, message: sentence.endsWith(".") ? sentence : `${sentence}.` };
}
