import { describe, expect, it } from "vitest";
import { desktopSize, ironErrorText } from "./rdpsize";

describe("the RDP desktop size", () => {
  it("follows the box in whole pixels with an even width", () => {
    expect(desktopSize(1001.7, 700.2)).toEqual({ width: 1000, height: 700 });
  });
  it("stays within what servers accept", () => {
    expect(desktopSize(10, 10)).toEqual({ width: 640, height: 480 });
    expect(desktopSize(20000, 9000)).toEqual({ width: 8192, height: 8192 });
  });
});

describe("IronRDP errors in words", () => {
  it("names the kind and keeps IronRDP's first line", () => {
    const error = { kind: () => 1, backtrace: () => "wrong password\n  at ..." };
    expect(ironErrorText(error)).toBe("The RDP server refused the user name or password. (wrong password)");
  });
  it("falls back on the message", () => {
    expect(ironErrorText({ kind: () => 0, backtrace: () => "boom" })).toBe("boom");
    expect(ironErrorText(new Error("plain"))).toBe("plain");
  });
});
