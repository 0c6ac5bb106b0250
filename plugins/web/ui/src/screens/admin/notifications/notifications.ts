// The notification screens' logic without markup: channel forms from the fields the API
// describes, rules as a form and back, which field a refusal names.
import { SECRET_MASK } from "../settings/settings";
import type { ChannelField, ChannelState, Rule } from "../types";

export { SECRET_MASK };

const WORDS: Record<string, string> = { url: "URL", id: "ID", tls: "TLS", smtp: "SMTP", api: "API" };

/** "botToken" -> "Bot token", "webhookUrl" -> "Webhook URL", "from" -> "From". */
export function fieldLabel(name: string): string {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .split(/[\s_-]+/)
    .filter(Boolean)
    .map((w) => w.toLowerCase());
  const text = words.map((w) => WORDS[w] ?? w).join(" ");
  return text.charAt(0).toUpperCase() + text.slice(1);
}

export interface HeaderRow {
  name: string;
  /** SECRET_MASK: keep the stored value */
  value: string;
}

/** A form's value per field: text for strings and numbers, booleans, header rows, secrets. */
export type FormValue = string | boolean | HeaderRow[] | undefined;

/** The form's starting values from a channel's (masked) config. */
export function channelForm(channel: ChannelState): Record<string, FormValue> {
  const form: Record<string, FormValue> = {};
  for (const field of channel.fields) {
    const stored = channel.config[field.name];
    if (field.secret) form[field.name] = undefined;
    else if (field.type === "boolean") form[field.name] = stored === undefined ? Boolean(field.default) : Boolean(stored);
    else if (field.type === "map") {
      const map = (stored ?? {}) as Record<string, string>;
      form[field.name] = Object.entries(map).map(([name, value]) => ({ name, value }));
    } else {
      const value = stored ?? field.default;
      form[field.name] = value === null || value === undefined ? "" : String(value);
    }
  }
  return form;
}

/**
 * The config to send: every field the form shows, as the API wants it. A secret left alone
 * is not sent (the stored one stays), a blank optional field never stored is left out (its
 * default applies), numbers typed as text become numbers (or stay text, for the server to
 * refuse in words).
 */
export function channelConfig(channel: ChannelState, form: Record<string, FormValue>): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  for (const field of channel.fields) {
    const value = form[field.name];
    const stored = field.name in channel.config;
    if (field.secret) {
      if (typeof value === "string") config[field.name] = value;
      continue;
    }
    if (field.type === "boolean") {
      config[field.name] = Boolean(value);
    } else if (field.type === "map") {
      const rows = (value as HeaderRow[] | undefined) ?? [];
      const map: Record<string, string> = {};
      for (const row of rows) if (row.name.trim()) map[row.name.trim()] = row.value;
      if (stored || Object.keys(map).length) config[field.name] = map;
    } else {
      const text = String(value ?? "");
      if (!text.trim() && !stored && !field.required) continue;
      if (field.type === "integer" || field.type === "number") {
        const n = Number(text.trim());
        config[field.name] = text.trim() !== "" && Number.isFinite(n) ? n : text;
      } else {
        config[field.name] = text;
      }
    }
  }
  return config;
}

/**
 * Which fields a refusal names ("The smtp configuration is not valid: port must be at
 * most 65535. from must ..."): each field with its sentence; what names none stays whole.
 */
export function fieldErrors(message: string, names: readonly string[]): { fields: Record<string, string>; rest: string } {
  const body = message.replace(/^The \S+ configuration is not valid:\s*/, "");
  const sentences = body.match(/[^.]+(\.|$)/g)?.map((s) => s.trim()).filter(Boolean) ?? [];
  const fields: Record<string, string> = {};
  const rest: string[] = [];
  for (const sentence of sentences) {
    const name = [...names].sort((a, b) => b.length - a.length).find((n) => sentence.startsWith(`${n} `) || sentence.startsWith(`config.${n} `));
    if (name) {
      const text = sentence.slice(sentence.indexOf(" ") + 1);
      fields[name] = text.charAt(0).toUpperCase() + text.slice(1);
    } else rest.push(sentence);
  }
  return { fields, rest: Object.keys(fields).length ? rest.join(" ") : message };
}

// -- rules ---------------------------------------------------------------------------

export const CONDITION_FIELDS = [
  ["ipAddress", "IP address"],
  ["username", "Username"],
  ["userId", "User ID"],
  ["eventType", "Event type"],
  ["target", "Target"],
  ["command", "Command (session.command)"],
] as const;

export const OPERATORS = [
  ["in", "is one of"],
  ["not_in", "is none of"],
  ["contains", "contains"],
  ["not_contains", "does not contain"],
  ["starts_with", "starts with"],
  ["ends_with", "ends with"],
  ["matches", "matches the pattern"],
] as const;

export const CADENCES = [
  ["instant", "At once, one message per event"],
  ["hourly", "Hourly digest"],
  ["daily", "Daily digest"],
] as const;

export interface ConditionForm {
  field: string;
  operator: string;
  /** comma-separated */
  values: string;
}

export interface ActionForm {
  channel: string;
  /** ids of users and roles picked from the list */
  picked: string[];
  /** other recipients, comma-separated (e-mail addresses, chat ids) */
  others: string;
}

export interface RuleForm {
  name: string;
  enabled: boolean;
  events: string[];
  conditionLogic: "and" | "or";
  conditions: ConditionForm[];
  cadence: string;
  actions: ActionForm[];
}

export function emptyRule(): RuleForm {
  return { name: "", enabled: true, events: [], conditionLogic: "and", conditions: [], cadence: "instant", actions: [] };
}

/** "a, b,,c " -> ["a", "b", "c"] */
export function splitList(text: string): string[] {
  return text
    .split(/[,\n]/)
    .map((s) => s.trim())
    .filter(Boolean);
}

/** A stored rule as a form; `known` are the user and role ids the recipient list offers. */
export function ruleForm(rule: Rule, known: ReadonlySet<string>): RuleForm {
  return {
    name: rule.name,
    enabled: rule.enabled,
    events: [...rule.events],
    conditionLogic: rule.conditionLogic === "or" ? "or" : "and",
    conditions: rule.conditions.map((c) => ({
      field: String(c.field ?? "ipAddress"),
      operator: String(c.operator ?? "in"),
      values: ((c.value as string[] | undefined) ?? []).join(", "),
    })),
    cadence: String(rule.cadence ?? "instant"),
    actions: rule.actions.map((a) => {
      const recipients = (a.recipients as string[] | undefined) ?? [];
      return {
        channel: String(a.channel ?? ""),
        picked: recipients.filter((r) => known.has(r)),
        others: recipients.filter((r) => !known.has(r)).join(", "),
      };
    }),
  };
}

/** The body of POST/PUT /notifications/rules. */
export function ruleBody(form: RuleForm) {
  return {
    name: form.name.trim(),
    enabled: form.enabled,
    events: form.events,
    conditionLogic: form.conditionLogic,
    conditions: form.conditions.map((c) => ({ field: c.field, operator: c.operator, value: splitList(c.values) })),
    cadence: form.cadence,
    actions: form.actions.map((a) => ({ channel: a.channel, recipients: [...a.picked, ...splitList(a.others)] })),
  };
}
