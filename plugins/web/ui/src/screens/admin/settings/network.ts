// The network policy's traps said before they are saved (pure, tested with Vitest): a
// non-empty network.allow turns the list into "only these", so every other target, the
// notification channels and the update check are refused unless an entry covers them.
import type { ChannelState } from "../types";

/** Something the gateway connects to by itself, and the host it connects to (null: not known here). */
export interface Outbound {
  what: string;
  host: string | null;
}

/** The entries of a rule list, as the server splits them (commas and white space). */
export function rulesOf(text: unknown): string[] {
  return String(text ?? "")
    .toLowerCase()
    .split(/[\s,]+/)
    .filter(Boolean);
}

function ipv4(text: string): number | null {
  const parts = text.split(".");
  if (parts.length !== 4 || parts.some((p) => !/^\d{1,3}$/.test(p) || Number(p) > 255)) return null;
  return parts.reduce((n, p) => n * 256 + Number(p), 0);
}

function inCidr(address: number, rule: string): boolean {
  const [base, bits = "32"] = rule.split("/");
  const start = ipv4(base);
  const size = Number(bits);
  if (start === null || !/^\d+$/.test(bits) || size > 32) return false;
  const block = 2 ** (32 - size);
  return Math.floor(address / block) === Math.floor(start / block);
}

function glob(pattern: string, host: string): boolean {
  const source = pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".");
  return new RegExp(`^${source}$`).test(host);
}

/**
 * Whether an entry of `rules` surely covers `host` as far as the browser can tell (names are
 * not resolved here: a name is covered by a matching pattern, an address by its range or keyword).
 */
export function covers(rules: readonly string[], host: string): boolean {
  const name = host.toLowerCase().replace(/^\[|\]$/g, "");
  const address = ipv4(name);
  const loopback = name === "localhost" || name === "::1" || (address !== null && address >>> 24 === 127);
  const privateV4 = address !== null && (address >>> 24 === 10 || address >>> 20 === 0xac1 || address >>> 16 === 0xc0a8);
  return rules.some((rule) => {
    if (rule === "loopback") return loopback;
    if (rule === "private") return privateV4 || loopback;
    if (address !== null && /^[\d.]+(\/\d+)?$/.test(rule) && rule.includes(".") && ipv4(rule.split("/")[0]) !== null) return inCidr(address, rule);
    return glob(rule, name);
  });
}

/** The host of a URL ("https://hooks.example.org/in" -> "hooks.example.org"), or null. */
export function hostOf(url: unknown): string | null {
  if (typeof url !== "string" || !/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) return null;
  try {
    return new URL(url).hostname || null;
  } catch {
    return null;
  }
}

// channels whose service is one fixed host (their secret URL or token is masked in the listing)
const SERVICE_HOSTS: Record<string, string> = { telegram: "api.telegram.org", slack: "hooks.slack.com" };

/** What the enabled notification channels connect to. */
export function channelTargets(channels: readonly ChannelState[]): Outbound[] {
  return channels
    .filter((c) => c.enabled)
    .map((c) => {
      const config = (c.config ?? {}) as Record<string, unknown>;
      const host = typeof config.host === "string" && config.host ? config.host : hostOf(config.url) ?? hostOf(config.webhookUrl) ?? SERVICE_HOSTS[c.id] ?? null;
      return { what: `Notification channel ${c.title || c.id}`, host };
    });
}

/** What the update check connects to ("" feed: the check is off, nothing to block). */
export function updateTarget(feedUrl: unknown): Outbound[] {
  const host = hostOf(feedUrl);
  return typeof feedUrl === "string" && feedUrl.trim() ? [{ what: "The update check", host }] : [];
}

/** Whether saving `after` as network.allow needs the warning: a non-empty list that is new. */
export function needsAllowWarning(before: unknown, after: unknown): boolean {
  const next = rulesOf(after);
  return next.length > 0 && next.join(",") !== rulesOf(before).join(",");
}

/** The outbound targets the allow list `after` would refuse (those no entry surely covers). */
export function blockedBy(after: unknown, targets: readonly Outbound[]): Outbound[] {
  const rules = rulesOf(after);
  return targets.filter((t) => t.host === null || !covers(rules, t.host));
}

/** Whether the allow list only names loopback: the wish was "also loopback", not "only loopback". */
export function onlyLoopback(after: unknown): boolean {
  const rules = rulesOf(after);
  return rules.length > 0 && rules.every((r) => r === "loopback" || r === "127.0.0.1" || r === "127.0.0.0/8" || r === "localhost" || r === "::1");
}

/** network.protected without loopback: loopback targets allowed, every other target as before. */
export function withoutLoopback(protectedText: unknown): string {
  return rulesOf(protectedText)
    .filter((r) => r !== "loopback")
    .join(", ");
}
