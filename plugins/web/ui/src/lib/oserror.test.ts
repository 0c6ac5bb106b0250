import { describe, expect, it } from "vitest";
import { plainOsErrors } from "./oserror";

describe("plainOsErrors", () => {
  it("says a refused connection in words, without the errno", () => {
    expect(plainOsErrors("Cannot reach ldap://127.0.0.1:1: [Errno 111] Connect call failed ('127.0.0.1', 1)")).toBe(
      "Cannot reach ldap://127.0.0.1:1: the connection was refused (nothing listens on that port, or a firewall rejects it)",
    );
  });
  it("covers name look-ups and resets", () => {
    expect(plainOsErrors("[Errno -2] Name or service not known")).toBe("the host name could not be found");
    expect(plainOsErrors("Connection lost: [Errno 104] Connection reset by peer")).toBe(
      "Connection lost: the connection was reset by the other side",
    );
  });
  it("keeps the system's words for a number it does not know", () => {
    expect(plainOsErrors("[Errno 28] No space left on device")).toBe("no space left on device");
  });
  it("leaves other text alone", () => {
    expect(plainOsErrors("Authentication failed.")).toBe("Authentication failed.");
  });
});
