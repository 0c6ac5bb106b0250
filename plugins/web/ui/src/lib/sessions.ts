// Session history helpers: the list's filters as a query, input-event ticks, the watch socket.
// Pure, so Vitest checks them.

export interface HistoryFilters {
  protocol: string;
  search: string;
  userId: string;
  from: string;
  to: string;
  recorded: "" | "true" | "false";
}

export const NO_FILTERS: HistoryFilters = { protocol: "", search: "", userId: "", from: "", to: "", recorded: "" };

export interface HistoryQuery {
  page: number;
  limit: number;
  protocol?: string;
  search?: string;
  userId?: string;
  from?: string;
  to?: string;
  recorded?: "true" | "false";
}

/** The `GET /sessions` query for a page with these filters (dates as local days: from 00:00, to 23:59:59.999). */
export function historyQuery(filters: HistoryFilters, page: number, limit: number): HistoryQuery {
  const query: HistoryQuery = { page, limit };
  if (filters.protocol) query.protocol = filters.protocol;
  if (filters.search.trim()) query.search = filters.search.trim();
  if (filters.userId) query.userId = filters.userId;
  if (filters.from) query.from = new Date(`${filters.from}T00:00:00`).toISOString();
  if (filters.to) query.to = new Date(`${filters.to}T23:59:59.999`).toISOString();
  if (filters.recorded) query.recorded = filters.recorded;
  return query;
}

/** Filters from the address (`?protocol=ssh&search=web`), so a reload keeps them. */
export function filtersFromSearch(search: string): { filters: HistoryFilters; page: number } {
  const params = new URLSearchParams(search);
  const recorded = params.get("recorded");
  const page = Number(params.get("page") ?? "1");
  return {
    filters: {
      protocol: params.get("protocol") ?? "",
      search: params.get("search") ?? "",
      userId: params.get("userId") ?? "",
      from: params.get("from") ?? "",
      to: params.get("to") ?? "",
      recorded: recorded === "true" || recorded === "false" ? recorded : "",
    },
    page: Number.isInteger(page) && page >= 1 ? page : 1,
  };
}

/** The address search part for filters and a page ("" when there is nothing to say). */
export function searchFromFilters(filters: HistoryFilters, page: number): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(filters)) if (value) params.set(key, value);
  if (page > 1) params.set("page", String(page));
  const text = params.toString();
  return text ? `?${text}` : "";
}

export interface InputEvent {
  elapsed: number;
  event_type: string;
}

export interface Tick {
  /** Seconds into the recording (the tick's first event). */
  time: number;
  /** Where on the timeline, 0–100 (%). */
  position: number;
  counts: Record<string, number>;
  label: string;
}

/**
 * Clicks and keys as ticks on a timeline of `duration` seconds (`elapsed` in milliseconds;
 * moves left out). An event closer than 1/`buckets` of the timeline to the one before it
 * joins that event's tick, so where an event falls never splits a burst in two.
 */
export function eventTicks(events: readonly InputEvent[], duration: number, buckets = 200): Tick[] {
  const shown = events
    .filter((e) => e.event_type !== "move" && Number.isFinite(e.elapsed))
    .map((e) => ({ time: e.elapsed / 1000, kind: e.event_type }))
    .sort((a, b) => a.time - b.time);
  const last = shown.length ? shown[shown.length - 1].time : 0;
  const span = Math.max(duration > 0 && Number.isFinite(duration) ? duration : 0, last, 0.001);
  const gap = span / buckets;
  const result: Tick[] = [];
  let previous = Number.NEGATIVE_INFINITY;
  for (const { time, kind } of shown) {
    let tick = result[result.length - 1];
    if (!tick || time - previous >= gap) {
      tick = { time, position: (time / span) * 100, counts: {}, label: "" };
      result.push(tick);
    }
    tick.counts[kind] = (tick.counts[kind] ?? 0) + 1;
    previous = time;
  }
  for (const tick of result) {
    const parts = Object.entries(tick.counts).map(([kind, n]) => `${n} ${kind}${n === 1 ? "" : kind.endsWith("s") ? "es" : "s"}`);
    tick.label = parts.join(", ");
  }
  return result;
}

export type JoinMode = "watch" | "observer" | "participant";

/** The live-view socket of a running session on this origin (`mode`: watch, or join as). */
export function watchUrl(origin: { protocol: string; host: string }, sessionId: string, ticket: string, mode: JoinMode = "watch"): string {
  const scheme = origin.protocol === "https:" ? "wss" : "ws";
  const query = new URLSearchParams(mode === "watch" ? { ticket } : { ticket, mode });
  return `${scheme}://${origin.host}/ws/sessions/${encodeURIComponent(sessionId)}/watch?${query}`;
}

export type HitKind = "" | "command" | "output";

/** What the history screen searches for (`?q=...&kind=...` in the address), or null. */
export function recordingSearchFromAddress(search: string): { q: string; kind: HitKind } | null {
  const params = new URLSearchParams(search);
  const q = (params.get("q") ?? "").trim();
  if (!q) return null;
  const kind = params.get("kind");
  return { q, kind: kind === "command" || kind === "output" ? kind : "" };
}

/** The address search part for a recording search with the list's filters and a page. */
export function addressForSearch(filters: HistoryFilters, q: string, kind: HitKind, page: number): string {
  const params = new URLSearchParams(searchFromFilters(filters, page));
  if (q.trim()) params.set("q", q.trim());
  if (q.trim() && kind) params.set("kind", kind);
  const text = params.toString();
  return text ? `?${text}` : "";
}

/** The `GET /sessions/search` query: the words, the kind, and the list's filters. */
export function recordingSearchQuery(filters: HistoryFilters, q: string, kind: HitKind, page: number, limit: number): HistoryQuery & { q: string; kind?: "command" | "output" } {
  return { ...historyQuery(filters, page, limit), q, ...(kind ? { kind } : {}) };
}

/** Where a hit opens: the session's player at `offset` seconds (rounded up: the text is shown). */
export function playAt(sessionId: string, offset: number): string {
  return `/sessions/${encodeURIComponent(sessionId)}/play?t=${Math.max(0, Math.ceil(offset * 10) / 10)}`;
}

/** The start offset (seconds) an address asks the player for (`?t=12.5`), or 0. */
export function startFromAddress(search: string): number {
  const value = Number(new URLSearchParams(search).get("t") ?? "0");
  return Number.isFinite(value) && value > 0 ? value : 0;
}

/**
 * The address's query with the player's moment in it (`t`, seconds into the session, to the
 * whole second; none at the start), the rest kept: a reload opens the player where it was.
 */
export function addressWithTime(search: string, seconds: number): string {
  const query = new URLSearchParams(search);
  const whole = Math.floor(seconds);
  if (Number.isFinite(whole) && whole >= 1) query.set("t", String(whole));
  else query.delete("t");
  const text = query.toString();
  return text ? `?${text}` : "";
}

/** A piece of a search hit's snippet: `match` where the words searched for are. */
export interface SnippetPiece {
  text: string;
  match: boolean;
}

/**
 * The pieces a hit's snippet is drawn from (text, and <mark> where `match`): the server's
 * parts (GET /sessions/search cuts the snippet where the words are), or the whole snippet
 * unmarked when they do not add up to it. Line breaks stay in the text.
 */
export function snippetPieces(snippet: string, parts: readonly SnippetPiece[] | undefined): SnippetPiece[] {
  const pieces = (parts ?? []).filter((part) => part.text !== "");
  if (pieces.map((part) => part.text).join("") !== snippet) return snippet ? [{ text: snippet, match: false }] : [];
  return pieces.map(({ text, match }) => ({ text, match }));
}

/** The mark of a session that came in by another door than the browser app ("via ssh"); null for the app's own. */
export function doorMark(via: string | null | undefined): string | null {
  return via ? `via ${via}` : null;
}

/** What the session detail says about how the client came in. */
export function doorFact(via: string | null | undefined): string {
  if (!via) return "the browser app";
  return via === "ssh" ? "the SSH front door (ssh)" : `${via}`;
}
