import { describe, expect, it } from "vitest";
import { describeProvides } from "./system";

describe("describeProvides", () => {
  it("names protocols and channels, counts settings and permissions", () => {
    expect(
      describeProvides({
        provides: ["protocols:ssh", "protocols:sftp", "settings:ssh.a", "settings:ssh.b", "permissions:connections.use_ssh", "channels:smtp"],
      }),
    ).toBe("protocols ssh, sftp · 2 settings · 1 permission · notification channel smtp");
  });
  it("says when a pack adds nothing", () => {
    expect(describeProvides({ provides: [] })).toBe("nothing yet");
  });
});
