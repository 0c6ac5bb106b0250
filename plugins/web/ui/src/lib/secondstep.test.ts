import { describe, expect, it } from "vitest";
import { firstStep, offeredSteps, passkeyCancelled } from "./secondstep";

describe("offeredSteps", () => {
  it("keeps the gateway's order and drops steps this app cannot walk through", () => {
    expect(offeredSteps({ mfaMethod: "totp", mfaMethods: ["totp", "passkey"] })).toEqual(["totp", "passkey"]);
    expect(offeredSteps({ mfaMethod: "passkey", mfaMethods: ["passkey", "smartcard"] })).toEqual(["passkey"]);
  });

  it("reads an older answer that names one method, and TOTP when none is named", () => {
    expect(offeredSteps({ mfaMethod: "totp" })).toEqual(["totp"]);
    expect(offeredSteps({})).toEqual(["totp"]);
    expect(offeredSteps({ mfaMethods: [] , mfaMethod: "passkey"})).toEqual(["passkey"]);
  });
});

describe("firstStep", () => {
  it("offers the passkey first when both are held", () => {
    expect(firstStep(["totp", "passkey"])).toBe("passkey");
    expect(firstStep(["totp"])).toBe("totp");
    expect(firstStep(["passkey"])).toBe("passkey");
  });
});

describe("passkeyCancelled", () => {
  it("points to the other ways in the second step only", () => {
    expect(passkeyCancelled(true)).toContain("use another way");
    expect(passkeyCancelled(false)).not.toContain("another way");
  });
});
