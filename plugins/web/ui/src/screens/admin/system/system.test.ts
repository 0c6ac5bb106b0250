import { describe, expect, it } from "vitest";
import { describeFetchError, describeProvides } from "./system";

describe("describeProvides", () => {
  it("names protocols and channels, counts settings and permissions", () => {
    expect(
      describeProvides({
        provides: ["protocols:ssh", "protocols:sftp", "settings:ssh.a", "settings:ssh.b", "permissions:connections.use_ssh", "channels:smtp"],
      }),
    ).toBe("protocols ssh, sftp · 2 settings · 1 permission · notification channel smtp");
  });
  it("names a pack's own API routes by their blueprint", () => {
    expect(describeProvides({ provides: ["blueprints:access_requests"] })).toBe("API routes access_requests");
  });
  it("says when a pack adds nothing", () => {
    expect(describeProvides({ provides: [] })).toBe("nothing yet");
  });
});

describe("describeFetchError", () => {
  it("says a policy refusal in words, not as its code", () => {
    const said = describeFetchError("could not reach the release feed: target_denied");
    expect(said.policy).toBe(true);
    expect(said.message).toContain("network policy refused");
    expect(said.message).not.toContain("target_denied");
    expect(describeFetchError("could not reach the release feed: remote_timeout").message).toBe("The release feed's host did not answer in time.");
  });
  it("keeps any other text as a sentence", () => {
    expect(describeFetchError("release feed returned HTTP 500")).toEqual({ message: "Release feed returned HTTP 500.", policy: false });
  });
});
