import { describe, expect, it } from "vitest";
import { strength, summarise } from "./password";

describe("summarise", () => {
  it("caps a short password at weak and says why", () => {
    const s = summarise("Xy9!", 4, null, []);
    expect(s).toMatchObject({ score: 1, label: "Weak", tooShort: true, refused: true });
    expect(s.hint).toContain("8 characters");
  });
});

describe("refused", () => {
  it("refuses what the gateway refuses: very weak, as its zxcvbn rule", () => {
    const weak = summarise("password", 0, "This is a top-10 common password.", []);
    expect(weak).toMatchObject({ label: "Very weak", tooShort: false, refused: true });
    expect(weak.hint).toBe("The gateway refuses a password this easy to guess. This is a top-10 common password.");
    expect(summarise("hunter22", 1, null, [])).toMatchObject({ label: "Weak", refused: false });
  });
});

describe("strength", () => {
  it("rates a common password very weak and a long passphrase strong", async () => {
    expect((await strength("password")).score).toBe(0);
    expect((await strength("password")).refused).toBe(true);
    expect((await strength("qwertyuiop")).refused).toBe(true);
    expect((await strength("correct horse battery staple orbit")).score).toBeGreaterThanOrEqual(3);
  });
  it("counts the username against the password", async () => {
    const alone = await strength("margaretha1982");
    const withName = await strength("margaretha1982", ["margaretha"]);
    expect(withName.score).toBeLessThanOrEqual(alone.score);
  });
});
