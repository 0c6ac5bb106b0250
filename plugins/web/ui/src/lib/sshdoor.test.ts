import { describe, expect, it } from "vitest";
import {
  configAlias,
  describeKeyError,
  doorHost,
  doorTarget,
  jumpCommand,
  jumpTarget,
  shellWord,
  sshCommand,
  sshConfigBlock,
} from "./sshdoor";

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

describe("jumpTarget", () => {
  const connection = { id: "0f4e-c1", name: "prod-db" };
  it("names the connection when ssh passes the name on unchanged and it is unique", () => {
    expect(jumpTarget(connection, ["prod-db", "web"])).toBe("prod-db");
    expect(jumpTarget({ id: "c-2", name: "db.east_2" }, [])).toBe("db.east_2");
  });
  it("uses the id for capitals (ssh lowercases the host), other characters, a leading dash or a shared name", () => {
    expect(jumpTarget({ id: "c-3", name: "Prod-DB" }, [])).toBe("c-3");
    for (const name of ["web box", "db:5432", "db@east", "-oProxyCommand=x", "", "é"]) {
      expect(jumpTarget({ id: "c-4", name }, [])).toBe("c-4");
    }
    expect(jumpTarget(connection, ["prod-db", "prod-db"])).toBe("0f4e-c1");
  });
});

describe("jumpCommand", () => {
  it("builds the exact ProxyJump command", () => {
    expect(jumpCommand(door, "alice", "prod-db", "gw.example.org")).toBe("ssh -J alice@gw.example.org:2222 prod-db");
  });
  it("puts an IPv6 door in brackets and quotes a user name a shell would split", () => {
    expect(jumpCommand({ ...door, address: "2001:db8::5" }, "bob", "c-1", "gw")).toBe("ssh -J 'bob@[2001:db8::5]:2222' c-1");
    expect(jumpCommand(door, "ann marie", "c-1", "gw")).toBe("ssh -J 'ann marie@gw:2222' c-1");
  });
});

describe("sshConfigBlock", () => {
  it("writes the ProxyJump block, without HostName when the alias is the target", () => {
    expect(sshConfigBlock(door, "alice", "prod-db", "prod-db", "gw.example.org")).toBe(
      "Host prod-db\n    ProxyJump alice@gw.example.org:2222",
    );
  });
  it("names the target by HostName under an alias made of the name, and quotes a user with blanks", () => {
    expect(configAlias(" Web box/2 ")).toBe("web-box-2");
    expect(configAlias("///")).toBe("hostgate");
    expect(sshConfigBlock(door, "ann marie", "web-box", "c-1", "gw")).toBe(
      'Host web-box\n    HostName c-1\n    ProxyJump "ann marie@gw:2222"',
    );
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
