import { describe, expect, it } from "vitest";
import { TERMINAL_THEMES, terminalTheme } from "./terminalthemes";

describe("terminalTheme", () => {
  it("knows the instance default and falls back to it", () => {
    expect(terminalTheme("vscode-dark")).toBe(TERMINAL_THEMES["vscode-dark"].theme);
    expect(terminalTheme("no-such-theme")).toBe(TERMINAL_THEMES["vscode-dark"].theme);
  });

  it("has every colour as a hex value", () => {
    for (const { theme } of Object.values(TERMINAL_THEMES)) {
      for (const value of Object.values(theme)) expect(value).toMatch(/^#[0-9a-f]{6}$/);
    }
  });
});
