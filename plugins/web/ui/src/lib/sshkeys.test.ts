import { describe, expect, it } from "vitest";
import { hostKeyFile } from "./sshkeys";

describe("hostKeyFile", () => {
  it("names OpenSSH's file for each algorithm", () => {
    expect(hostKeyFile("ssh-ed25519")).toBe("/etc/ssh/ssh_host_ed25519_key.pub");
    expect(hostKeyFile("ecdsa-sha2-nistp256")).toBe("/etc/ssh/ssh_host_ecdsa_key.pub");
    expect(hostKeyFile("rsa-sha2-512")).toBe("/etc/ssh/ssh_host_rsa_key.pub");
    expect(hostKeyFile("ssh-rsa")).toBe("/etc/ssh/ssh_host_rsa_key.pub");
  });
  it("has no file for anything else", () => {
    expect(hostKeyFile("x509v3-sign")).toBeNull();
  });
});
