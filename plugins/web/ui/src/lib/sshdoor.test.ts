import { describe, expect, it } from "vitest";
import { configAlias, describeKeyError, doorHost, doorTarget, shellWord, sshCommand, sshConfigBlock } from "./sshdoor";

const door = { listening: true, address: "127.0.0.1", port: 2222, separator: ":" };

describe("doorHost", () => {
  it("uses the page's host name for loopback and any-address listeners", () => {
    for (const address of ["127.0.0.1", "0.0.0.0", "::", "::1", "localhost", ""]) {
      expect(doorHost(address, "gw.example.org")).toBe("gw.example.org");
    }
  });
  it("keeps a real address and strips IPv6 brackets", () => {
    expect(doorHost("192.0.2.7", "gw.example.org")).toBe("192.0.2.7");
    expect(doorHost("::", "[2001:db8::1]")).toBe("2001:db8::1");
  });
});

describe("shellWord", () => {
  it("quotes only what a shell would split or expand", () => {
    expect(shellWord("alice:db@gw")).toBe("alice:db@gw");
    expect(shellWord("alice:prod db@gw")).toBe("'alice:prod db@gw'");
    expect(shellWord("it's")).toBe("'it'\\''s'");
    expect(shellWord("a$HOME")).toBe("'a$HOME'");
  });
});

describe("doorTarget", () => {
  const connection = { id: "c-1", name: "prod-db" };
  it("names the connection when the name is unique among those seen", () => {
    expect(doorTarget(connection, ["prod-db", "web"])).toBe("prod-db");
  });
  it("falls back to the id for a shared name, an @, blanks at the ends or an empty name", () => {
    expect(doorTarget(connection, ["prod-db", "prod-db"])).toBe("c-1");
    expect(doorTarget({ id: "c-2", name: "db@east" }, [])).toBe("c-2");
    expect(doorTarget({ id: "c-3", name: " db" }, [])).toBe("c-3");
    expect(doorTarget({ id: "c-4", name: "" }, [])).toBe("c-4");
  });
  it("keeps a name with a colon: everything after the first one is the connection", () => {
    expect(doorTarget({ id: "c-5", name: "db:5432" }, [])).toBe("db:5432");
  });
});

describe("sshCommand", () => {
  it("builds the exact command with port, user, separator and target", () => {
    expect(sshCommand(door, "alice", "prod-db", "gw.example.org")).toBe("ssh -p 2222 alice:prod-db@gw.example.org");
  });
  it("uses the door's own address when it listens on one", () => {
    expect(sshCommand({ ...door, address: "10.0.0.5", port: 22 }, "bob", "c-1", "gw")).toBe("ssh -p 22 bob:c-1@10.0.0.5");
  });
  it("quotes a destination with spaces as one word", () => {
    expect(sshCommand(door, "alice", "web box", "gw")).toBe("ssh -p 2222 'alice:web box@gw'");
  });
});

describe("sshConfigBlock", () => {
  it("writes a Host block the command-line tools can use", () => {
    expect(sshConfigBlock(door, "alice", "prod-db", "gw.example.org")).toBe(
      "Host prod-db\n    HostName gw.example.org\n    Port 2222\n    User alice:prod-db",
    );
  });
  it("makes an alias of a name with spaces and quotes the user", () => {
    expect(configAlias(" web box/2 ")).toBe("web-box-2");
    expect(configAlias("///")).toBe("hostgate");
    expect(sshConfigBlock(door, "alice", "web box", "gw")).toBe('Host web-box\n    HostName gw\n    Port 2222\n    User "alice:web box"');
  });
});

describe("describeKeyError", () => {
  it("turns the gateway's publicKey refusals into sentences", () => {
    expect(describeKeyError("publicKey: must not be blank")).toMatch(/^Paste your public key/);
    expect(describeKeyError("publicKey: paste one public key line (ssh-ed25519 AAAA... comment), never a private key")).toMatch(/never a private key\.$/);
    expect(describeKeyError("publicKey: not an OpenSSH public key line")).toMatch(/^That is not an OpenSSH public key line/);
    expect(describeKeyError("publicKey: RSA keys need at least 2048 bits")).toBe("RSA keys need at least 2048 bits.");
  });
});
