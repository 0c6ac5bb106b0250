import { describe, expect, it } from "vitest";
import { clock, findInOutput, idleClock, outputText, parseCast, plainText } from "./cast";

const CAST = [
  '{"version": 2, "width": 100, "height": 30, "title": "web-1"}',
  '[0.5, "o", "$ "]',
  '[1.0, "o", "e"]',
  '[1.1, "o", "cho hel"]',
  '[1.2, "o", "lo\\r\\n\\u001b[1;32mhello\\u001b[0m\\r\\n$ "]',
  '[11.2, "o", "ls\\r\\n"]',
  '[11.3, "r", "120x40"]',
  '[11.5, "o", "file-one  \\u001b]0;title\\u0007HELLO\\r\\n$ "]',
  '[12.0, "o", "partial',
].join("\n");

describe("parseCast", () => {
  it("reads the header and whole events, skipping a cut-short last line", () => {
    const cast = parseCast(CAST);
    expect([cast.width, cast.height, cast.title]).toEqual([100, 30, "web-1"]);
    expect(cast.events).toHaveLength(7);
    expect(cast.events[5]).toEqual({ time: 11.3, code: "r", data: "120x40" });
  });

  it("survives a broken header", () => {
    expect(parseCast("not json\n[1, \"o\", \"x\"]").width).toBe(80);
  });
});

describe("idleClock", () => {
  const events = parseCast(CAST).events;

  it("is the recording time without a limit", () => {
    expect(idleClock(events, null).toPlayer(11.5)).toBe(11.5);
    expect(idleClock(events, null).toRecording(3)).toBe(3);
  });

  it("cuts pauses longer than the limit as asciinema-player does", () => {
    const clock = idleClock(events, 2);
    const at = (t: number) => clock.toPlayer(t);
    expect(at(0.5)).toBeCloseTo(0.5);
    expect(at(1.2)).toBeCloseTo(1.2);
    expect(at(11.2)).toBeCloseTo(3.2); // the 10 s pause became 2 s
    expect(at(11.5)).toBeCloseTo(3.5);
    expect(at(5)).toBeCloseTo(3.2); // inside the pause: at most the limit after its start
    expect(at(1.5)).toBeCloseTo(1.5);
  });

  it("maps the player's time back to the recording", () => {
    const clock = idleClock(events, 2);
    for (const t of [0.5, 1.1, 11.2, 11.5, 12]) expect(clock.toRecording(clock.toPlayer(t))).toBeCloseTo(t);
  });
});

describe("search", () => {
  const output = outputText(parseCast(CAST).events);

  it("strips escapes and controls but keeps line feeds", () => {
    expect(plainText("\u001b[1;32mok\u001b[0m\r\n\u001b]0;t\u0007x\u0008")).toBe("ok\nx");
  });

  it("finds text across events, any case, at the event that completes it", () => {
    expect(findInOutput(output, "echo hello")).toEqual([1.2]);
    expect(findInOutput(output, "hello")).toEqual([1.2, 11.5]);
    expect(findInOutput(output, "echo hel")).toEqual([1.1]);
    expect(findInOutput(output, "nothing")).toEqual([]);
    expect(findInOutput(output, "")).toEqual([]);
  });
});

describe("clock", () => {
  it("reads as minutes and seconds", () => {
    expect(clock(7)).toBe("0:07");
    expect(clock(65.47, true)).toBe("1:05.4");
    expect(clock(3723)).toBe("1:02:03");
    expect(clock(Number.NaN)).toBe("0:00");
  });
});
