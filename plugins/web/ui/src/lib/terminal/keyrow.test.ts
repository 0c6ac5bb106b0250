import { describe, expect, it } from "vitest";
import { keyBytes, withCtrl } from "./keyrow";

describe("the key row", () => {
  it("sends what a keyboard's keys send", () => {
    expect(keyBytes("Escape")).toBe("\x1b");
    expect(keyBytes("Tab")).toBe("\t");
    expect(keyBytes("ArrowLeft")).toBe("\x1b[D");
    expect(keyBytes("ArrowUp", true)).toBe("\x1bOA");
  });
  it("turns the next key into its control character while Ctrl is held", () => {
    expect(withCtrl("c")).toBe("\x03");
    expect(withCtrl("U")).toBe("\x15");
    expect(withCtrl("[")).toBe("\x1b");
    expect(withCtrl("?")).toBe("\x7f");
    expect(withCtrl("1")).toBe("1");
    expect(withCtrl("ls")).toBe("ls");
  });
});
