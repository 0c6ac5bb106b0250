import { describe, expect, it } from "vitest";
import { NO_FILTERS, exportHref, filtersFrom, fromLocalInput, queryOf, toLocalInput } from "./audit";

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
