import { describe, expect, it } from "vitest";
import { strength, summarise } from "./password";

describe("summarise", () => {
  it("caps a short password at weak and says why", () => {
    const s = summarise("Xy9!", 4, null, []);
    expect(s).toMatchObject({ score: 1, label: "Weak", tooShort: true });
    expect(s.hint).toContain("8 characters");
  });
});

describe("strength", () => {
  it("rates a common password very weak and a long passphrase strong", async () => {
    expect((await strength("password")).score).toBe(0);
    expect((await strength("correct horse battery staple orbit")).score).toBeGreaterThanOrEqual(3);
  });
  it("counts the username against the password", async () => {
    const alone = await strength("margaretha1982");
    const withName = await strength("margaretha1982", ["margaretha"]);
    expect(withName.score).toBeLessThanOrEqual(alone.score);
  });
});
