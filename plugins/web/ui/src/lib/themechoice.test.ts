import { describe, expect, it } from "vitest";
import { THEMES, parseTheme } from "./themechoice";

describe("parseTheme", () => {
  it("keeps light and dark", () => {
    expect(parseTheme("light")).toBe("light");
    expect(parseTheme("dark")).toBe("dark");
  });
  it("falls back to the system for anything else", () => {
    expect(parseTheme(null)).toBe("system");
    expect(parseTheme(undefined)).toBe("system");
    expect(parseTheme("Dark")).toBe("system");
    expect(parseTheme("solarized")).toBe("system");
  });
  it("offers every choice once", () => {
    expect(THEMES.map((t) => t.value)).toEqual(["system", "light", "dark"]);
  });
});
