// Turning the connection form's state into a create/update body (pure, tested with Vitest).
import type { Connection, ProtocolField } from "../api/types";

export interface FormState {
  name: string;
  protocol: string;
  host: string;
  port: string;
  username: string;
  tags: string;
  groupId: string;
  /** A stored SSH connection to go through ("" = direct). */
  jumpHostId: string;
  /** Only the owner (and editors of any connection) use it freely; others ask for a while. */
  approvalRequired: boolean;
  /** A terminal session to it waits, input held, until a moderator joins. */
  moderationRequired: boolean;
  /** Per-action switches (file upload/download/delete, clipboard copy/paste): true allows. */
  actions: Record<ActionName, boolean>;
  /** undefined keeps the stored secret, "" removes it, anything else replaces it. */
  password: string | undefined;
  privateKey: string | undefined;
  /** Pack fields by name: strings from inputs, booleans from checkboxes, secrets as above. */
  extra: Record<string, string | boolean | undefined>;
}

/** The per-action rights a connection switches (the role's permission is needed too). */
export const ACTIONS = [
  { name: "upload", label: "Upload files", hint: "file browser, SFTP and scp" },
  { name: "download", label: "Download files", hint: "file browser, SFTP and scp" },
  { name: "delete", label: "Delete files", hint: "file browser and SFTP" },
  { name: "copy", label: "Copy from the desktop", hint: "VNC clipboard to the browser" },
  { name: "paste", label: "Paste", hint: "into VNC desktops and terminals" },
] as const;
export type ActionName = (typeof ACTIONS)[number]["name"];

/** Every action allowed, or the stored switches (a key left out is allowed). */
export function actionsFrom(stored?: Partial<Record<string, boolean>> | null): Record<ActionName, boolean> {
  const actions = {} as Record<ActionName, boolean>;
  for (const { name } of ACTIONS) actions[name] = stored?.[name] !== false;
  return actions;
}

/** The form for a new connection of `protocol`, with the pack's defaults. */
export function emptyForm(protocol: string, fields: ProtocolField[]): FormState {
  const extra: FormState["extra"] = {};
  for (const field of fields) extra[field.name] = initialValue(field, undefined);
  return { name: "", protocol, host: "", port: "", username: "", tags: "", groupId: "", jumpHostId: "", approvalRequired: false, moderationRequired: false, actions: actionsFrom(), password: undefined, privateKey: undefined, extra };
}

function initialValue(field: ProtocolField, stored: unknown): string | boolean | undefined {
  if (field.secret) return undefined;
  const value = stored ?? field.default;
  if (field.type === "boolean") return Boolean(value);
  return value === null || value === undefined ? "" : String(value);
}

/** The form for editing `connection` (secrets are never known: they stay "keep"). */
export function formFrom(connection: Connection, fields: ProtocolField[]): FormState {
  const extra: FormState["extra"] = {};
  for (const field of fields) extra[field.name] = initialValue(field, connection.extraConfig[field.name]);
  return {
    name: connection.name,
    protocol: connection.protocol,
    host: connection.host,
    port: String(connection.port ?? ""),
    username: connection.username ?? "",
    tags: connection.tags.join(", "),
    groupId: connection.groupId ?? "",
    jumpHostId: connection.jumpHostId ?? "",
    approvalRequired: Boolean(connection.approvalRequired),
    moderationRequired: connection.moderation === "required",
    actions: actionsFrom(connection.actions),
    password: undefined,
    privateKey: undefined,
    extra,
  };
}

/** Client-side checks before sending; field name to message. */
export function validate(form: FormState, fields: ProtocolField[], creating: boolean): Record<string, string> {
  const errors: Record<string, string> = {};
  if (!form.name.trim()) errors.name = "Enter a name.";
  if (!form.host.trim()) errors.host = "Enter a host name or IP address.";
  if (form.port.trim() && !/^\d+$/.test(form.port.trim())) errors.port = "The port is a number from 1 to 65535.";
  else if (form.port.trim() && (Number(form.port) < 1 || Number(form.port) > 65535)) errors.port = "The port is a number from 1 to 65535.";
  for (const field of fields) {
    const value = form.extra[field.name];
    if (field.type === "integer" && typeof value === "string" && value.trim() && !/^-?\d+$/.test(value.trim())) {
      errors[field.name] = "Enter a whole number.";
    }
    if (field.required && !field.secret && (value === "" || value === undefined)) errors[field.name] = "This field is required.";
    if (field.required && field.secret && creating && !value) errors[field.name] = "This field is required.";
  }
  return errors;
}

/** The JSON body for POST /connections (creating) or PUT /connections/:id. */
export function toBody(form: FormState, fields: ProtocolField[], creating: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = {
    name: form.name.trim(),
    protocol: form.protocol,
    host: form.host.trim(),
    port: form.port.trim() ? Number(form.port) : null,
    username: form.username.trim(),
    tags: form.tags.split(",").map((t) => t.trim()).filter(Boolean),
    groupId: form.groupId || null,
  };
  if (form.jumpHostId || !creating) body.jumpHostId = form.jumpHostId || null;
  // an update always says it, so unticking the switch really lifts the gate
  if (form.approvalRequired || !creating) body.approvalRequired = form.approvalRequired;
  if (form.moderationRequired || !creating) body.moderation = form.moderationRequired ? "required" : "none";
  // like the switches above: a new connection that allows everything leaves it out
  if (!creating || Object.values(form.actions).some((on) => !on)) body.actions = { ...form.actions };
  for (const key of ["password", "privateKey"] as const) {
    const value = form[key];
    if (value !== undefined && (value !== "" || !creating)) body[key] = value;
  }
  const extra: Record<string, unknown> = {};
  for (const field of fields) {
    const value = form.extra[field.name];
    if (field.secret) {
      if (value !== undefined && (value !== "" || !creating)) extra[field.name] = value;
    } else if (field.type === "boolean") {
      extra[field.name] = Boolean(value);
    } else if (value === "" || value === undefined) {
      if (!creating) extra[field.name] = null;
    } else {
      extra[field.name] = field.type === "integer" ? Number(value) : value;
    }
  }
  body.extraConfig = extra;
  return body;
}

/** A pack field's setting as the connection's page shows it: its label from the protocol's
 * field list (never the raw name, "promptOnConnect"), and yes/no for a switch. */
export function extraRows(extra: Record<string, unknown>, fields: readonly ProtocolField[]): { label: string; value: string }[] {
  return Object.entries(extra).map(([name, value]) => {
    const field = fields.find((f) => f.name === name);
    // "promptOnConnect" -> "Prompt on connect" when the pack gave no words for it
    const spaced = name.replace(/([a-z0-9])([A-Z])/g, "$1 $2").replace(/[_-]+/g, " ").toLowerCase();
    const label = field?.description || spaced.charAt(0).toUpperCase() + spaced.slice(1);
    const shown = typeof value === "boolean" ? (value ? "Yes" : "No") : value === null || value === "" ? "—" : String(value);
    return { label, value: shown };
  });
}
