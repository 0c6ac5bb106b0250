import { describe, expect, it } from "vitest";
import { allowedActions, deniedSentence } from "./rights";

describe("per-action rights", () => {
  it("needs the connection's switch and the role's permission", () => {
    const allowed = allowedActions({ upload: false }, ["files.upload", "files.download", "clipboard.paste"]);
    expect(allowed).toEqual({ upload: false, download: true, delete: false, copy: false, paste: true });
  });

  it("treats a connection without switches as allowing everything", () => {
    const all = ["files.upload", "files.download", "files.delete", "clipboard.copy", "clipboard.paste"];
    expect(Object.values(allowedActions(undefined, all))).toEqual([true, true, true, true, true]);
  });

  it("says what is off", () => {
    const allowed = allowedActions({ upload: false, delete: false }, ["files.download"]);
    expect(deniedSentence(allowed, ["upload", "download", "delete"])).toBe("uploads and deletions");
    expect(deniedSentence(allowedActions({}, ["files.upload", "files.download", "files.delete"]), ["upload", "download", "delete"])).toBe("");
  });
});
