import { describe, expect, it } from "vitest";
import { NO_FILTERS, eventLabel, exportHref, filtersFrom, fromLocalInput, queryOf, targetLabel, toLocalInput } from "./audit";

describe("filters and the address bar", () => {
  it("round-trips through the query string", () => {
    const filters = { ...NO_FILTERS, eventType: "user.created", search: "carol", page: 3, limit: 50 };
    const search = `?${new URLSearchParams(queryOf(filters)).toString()}`;
    expect(filtersFrom(search)).toEqual(filters);
  });
  it("leaves defaults and blanks out", () => {
    expect(queryOf({ ...NO_FILTERS, search: "  " })).toEqual({});
  });
  it("ignores nonsense pages and sizes", () => {
    expect(filtersFrom("?page=-2&limit=7")).toMatchObject({ page: 1, limit: 25 });
    expect(filtersFrom("?page=abc&limit=200")).toMatchObject({ page: 1, limit: 200 });
  });
});

describe("exportHref", () => {
  it("carries the filters and the format, never the page", () => {
    const href = exportHref({ ...NO_FILTERS, userId: "u1", page: 4 }, "csv");
    expect(href).toBe("/api/v1/audit/export?format=csv&userId=u1");
  });
});

describe("local date-time fields", () => {
  it("convert to ISO and back in the browser's zone", () => {
    const iso = fromLocalInput("2026-11-25T14:05");
    expect(iso).toMatch(/^2026-11-2\dT\d\d:05:00\.000Z$/);
    expect(toLocalInput(iso)).toBe("2026-11-25T14:05");
  });
  it("are empty when unset or invalid", () => {
    expect(fromLocalInput("")).toBe("");
    expect(toLocalInput("not a date")).toBe("");
  });
});

describe("targetLabel", () => {
  const id = "0b6c1c9e-5d7e-4b8a-9d1c-2f3e4a5b6c7d";
  it("shows a connection's name whichever form the event wrote", () => {
    expect(targetLabel({ target: id, details: { connectionId: id, name: "prod-db" } })).toEqual({
      text: "prod-db",
      title: `Connection id ${id}`,
    });
    expect(targetLabel({ target: "ssh://10.0.0.5:22", details: { connectionId: id, name: "prod-db" } })).toEqual({
      text: "prod-db",
      title: `Connection id ${id} · ssh://10.0.0.5:22`,
    });
    expect(targetLabel({ target: "10.0.0.5:22", details: { connectionId: id, connectionName: "prod-db" } }).text).toBe("prod-db");
  });
  it("keeps the target as written when the entry names nothing else", () => {
    expect(targetLabel({ target: "alice", details: { userId: "u1" } })).toEqual({ text: "alice", title: "" });
    expect(targetLabel({ target: null, details: {} })).toEqual({ text: "", title: "" });
  });
});

describe("eventLabel", () => {
  it("says an event type in words", () => {
    expect(eventLabel("user.password_reset")).toBe("User: password reset");
    expect(eventLabel("connection.host_key.accepted")).toBe("Connection: host key accepted");
    expect(eventLabel("backup")).toBe("Backup");
  });
});
