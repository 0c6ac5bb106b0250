import { describe, expect, it } from "vitest";
import { duration, running, type AccessRequest } from "./accessrequests";

describe("access requests", () => {
  it("says durations in words", () => {
    expect(duration(30)).toBe("30 min");
    expect(duration(60)).toBe("1 h");
    expect(duration(90)).toBe("1 h 30 min");
  });

  it("knows when an approval still runs", () => {
    const base = { status: "approved", endsAt: "2026-11-25T10:00:00.000Z" } as AccessRequest;
    expect(running(base, new Date("2026-11-25T09:59:00Z"))).toBe(true);
    expect(running(base, new Date("2026-11-25T10:00:01Z"))).toBe(false);
    expect(running({ ...base, status: "revoked" }, new Date("2026-11-25T09:00:00Z"))).toBe(false);
  });
});
