import { describe, expect, it } from "vitest";
import { formatDate, formatDuration, formatSize, formatSpeed } from "./format";

describe("formatSize", () => {
  it("uses binary units with at most three digits", () => {
    expect(formatSize(0)).toBe("0 B");
    expect(formatSize(1023)).toBe("1023 B");
    expect(formatSize(1536)).toBe("1.5 KiB");
    expect(formatSize(64 * 1024 * 1024)).toBe("64 MiB");
    expect(formatSize(1024 ** 3)).toBe("1.0 GiB");
  });

  it("refuses nonsense", () => {
    expect(formatSize(-1)).toBe("—");
    expect(formatSize(Number.NaN)).toBe("—");
  });
});

describe("formatSpeed", () => {
  it("is a size per second", () => {
    expect(formatSpeed(12.4 * 1024 * 1024)).toBe("12 MiB/s");
  });
});

describe("formatDate", () => {
  it("shows a dash for missing or broken dates", () => {
    expect(formatDate(null)).toBe("—");
    expect(formatDate("not a date")).toBe("—");
    expect(formatDate("2026-11-25T14:05:00.000Z", "en-GB")).toContain("2026");
  });
});

describe("formatDuration", () => {
  it("reads as seconds, minutes and hours", () => {
    const start = "2026-11-25T10:00:00Z";
    expect(formatDuration(start, "2026-11-25T10:00:45Z")).toBe("45 s");
    expect(formatDuration(start, "2026-11-25T10:12:05Z")).toBe("12 min 5 s");
    expect(formatDuration(start, "2026-11-25T12:03:00Z")).toBe("2 h 3 min");
    expect(formatDuration(start, null, new Date("2026-11-25T10:01:00Z"))).toBe("1 min");
    expect(formatDuration(null, null)).toBe("—");
  });
});
