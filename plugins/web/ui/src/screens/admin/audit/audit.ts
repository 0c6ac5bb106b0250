// The audit screen's logic without markup: filters <-> the address bar and the API's query,
// the export link, local date-time fields <-> ISO timestamps.

export interface AuditFilters {
  eventType: string;
  userId: string;
  /** ISO 8601, or "" */
  from: string;
  to: string;
  search: string;
  page: number;
  limit: number;
}

export const PAGE_SIZES = [25, 50, 100, 200] as const;

export const NO_FILTERS: AuditFilters = { eventType: "", userId: "", from: "", to: "", search: "", page: 1, limit: 25 };

function positive(raw: string | null, fallback: number): number {
  const n = Number(raw);
  return raw !== null && Number.isInteger(n) && n >= 1 ? n : fallback;
}

/** The filters a location's query string holds (a deep link, a reload). */
export function filtersFrom(search: string): AuditFilters {
  const q = new URLSearchParams(search);
  const limit = positive(q.get("limit"), 25);
  return {
    eventType: q.get("eventType") ?? "",
    userId: q.get("userId") ?? "",
    from: q.get("from") ?? "",
    to: q.get("to") ?? "",
    search: q.get("search") ?? "",
    page: positive(q.get("page"), 1),
    limit: (PAGE_SIZES as readonly number[]).includes(limit) ? limit : 25,
  };
}

/** The API's (and the address bar's) query: only what is set; page 1 and 25 a page left out. */
export function queryOf(filters: AuditFilters, paging = true): Record<string, string> {
  const query: Record<string, string> = {};
  for (const key of ["eventType", "userId", "from", "to", "search"] as const) {
    const value = filters[key].trim();
    if (value) query[key] = value;
  }
  if (paging && filters.page > 1) query.page = String(filters.page);
  if (paging && filters.limit !== 25) query.limit = String(filters.limit);
  return query;
}

/** `?a=b&...` or "" . */
export function queryString(query: Record<string, string>): string {
  const text = new URLSearchParams(query).toString();
  return text ? `?${text}` : "";
}

/** The download link of the filtered view (GET /audit/export). */
export function exportHref(filters: AuditFilters, format: "csv" | "json"): string {
  return `/api/v1/audit/export${queryString({ format, ...queryOf(filters, false) })}`;
}

function pad(n: number): string {
  return String(n).padStart(2, "0");
}

/** An ISO timestamp as a datetime-local field's value in the browser's zone ("" when unset). */
export function toLocalInput(iso: string): string {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** A datetime-local field's value as an ISO timestamp ("" when empty or invalid). */
export function fromLocalInput(value: string): string {
  if (!value) return "";
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? "" : d.toISOString();
}

/** "ab12cd34…" for a long hash. */
export function shortHash(hash: string): string {
  return hash.length > 16 ? `${hash.slice(0, 16)}…` : hash;
}

/** How an entry's target shows in the table: a name, and what the name stands for on hover. */
export interface TargetLabel {
  /** A name ("prod-db"), or the target as written when the entry names nothing else; "" for none. */
  text: string;
  /** The id (and the address, if the entry wrote one) behind the name, for the hover title; "" for none. */
  title: string;
}

function text(value: unknown): string {
  return typeof value === "string" ? value.trim() : "";
}

/** The target of an entry the same way in every row. Entries about a connection write its id,
 * its address or its name as the target, depending on the event; each of them carries the
 * connection's id and name in its details, so the name shows and the id is on hover. */
export function targetLabel(entry: { target: string | null; details: Record<string, unknown> }): TargetLabel {
  const target = text(entry.target);
  const details = entry.details ?? {};
  const connectionId = text(details.connectionId);
  const name = text(details.connectionName) || (connectionId ? text(details.name) : "");
  if (!connectionId || !name) return { text: target, title: "" };
  const behind = [`Connection id ${connectionId}`];
  if (target && target !== connectionId && target !== name) behind.push(target);
  return { text: name, title: behind.join(" · ") };
}

/** An event type as words, for people: "user.password_reset" -> "User: password reset",
 * "connection.host_key.accepted" -> "Connection: host key accepted". The code stays on hover
 * and in the filter's value (the API's word for it). */
export function eventLabel(type: string): string {
  const [head, ...rest] = type.split(".");
  const words = (part: string) => part.replace(/_/g, " ").trim();
  const subject = words(head);
  const what = rest.map(words).filter(Boolean).join(" ");
  const title = subject.charAt(0).toUpperCase() + subject.slice(1);
  return what ? `${title}: ${what}` : title;
}
