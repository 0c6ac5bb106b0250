import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { SHOW_EVERY_MS, Transfer } from "./upload.svelte";

/** What the page's XMLHttpRequest was asked to do, and a way to answer it. */
class RecordedRequest {
  static last: RecordedRequest | null = null;
  method = "";
  url = "";
  headers: Record<string, string> = {};
  body: unknown = undefined;
  sends = 0;
  status = 0;
  statusText = "";
  responseText = "";
  upload: { onprogress: ((event: { loaded: number }) => void) | null } = { onprogress: null };
  onload: (() => void) | null = null;
  onerror: (() => void) | null = null;
  onabort: (() => void) | null = null;

  constructor() {
    RecordedRequest.last = this;
  }
  open(method: string, url: string): void {
    this.method = method;
    this.url = url;
  }
  setRequestHeader(name: string, value: string): void {
    this.headers[name] = value;
  }
  send(body: unknown): void {
    this.body = body;
    this.sends += 1;
  }
  abort(): void {
    this.onabort?.();
  }
  getResponseHeader(): string | null {
    return null;
  }
  answer(status: number, text = ""): void {
    this.status = status;
    this.responseText = text;
    this.onload?.();
  }
}

const file = new File([new Uint8Array(3000)], "big.bin");

function sent(): RecordedRequest {
  const request = RecordedRequest.last;
  if (!request) throw new Error("no request was made");
  return request;
}

describe("Transfer", () => {
  beforeEach(() => {
    RecordedRequest.last = null;
    vi.stubGlobal("XMLHttpRequest", RecordedRequest);
  });
  afterEach(() => vi.unstubAllGlobals());

  it("sends the picked File itself as the one request's body", async () => {
    // Chromium reads a File body of an XMLHttpRequest straight from disk in its network
    // service; fetch() with the same File cost it ~1.8x the CPU per GiB (bench/web_files.py
    // --shapes), and reading it into the page would cost memory too.
    const transfer = new Transfer({ relativePath: "big.bin", file }, "docs");
    const done = transfer.run("/api/v1/sftp/c1/upload?path=docs%2Fbig.bin", "session-1");
    const request = sent();
    expect(request.method).toBe("POST");
    expect(request.url).toBe("/api/v1/sftp/c1/upload?path=docs%2Fbig.bin");
    expect(request.body).toBe(file);
    expect(request.sends).toBe(1);
    expect(request.headers).toEqual({
      "Content-Type": "application/octet-stream",
      "X-File-Session-Id": "session-1",
    });
    expect(transfer.state).toBe("uploading");
    request.upload.onprogress?.({ loaded: 1000 });
    expect(transfer.loaded).toBe(1000);
    request.answer(200, '{"success":true}');
    await done;
    expect(transfer.state).toBe("done");
    expect(transfer.loaded).toBe(3000);
    expect(transfer.path).toBe("docs/big.bin");
  });

  it("redraws a running upload at most every SHOW_EVERY_MS, from the first progress on", async () => {
    let now = 1000;
    vi.spyOn(performance, "now").mockImplementation(() => now);
    const transfer = new Transfer({ relativePath: "big.bin", file }, "");
    const done = transfer.run("/upload", "s");
    const request = sent();
    const shown: number[] = [];
    // Chromium's pace: an event every 50 ms, 100 bytes further each time
    for (let step = 1; step <= 12; step++) {
      now += 50;
      request.upload.onprogress?.({ loaded: step * 100 });
      if (shown.at(-1) !== transfer.loaded) shown.push(transfer.loaded);
    }
    // the first event at once, then one every 250 ms (5 events): 12 events, 3 redraws
    expect(SHOW_EVERY_MS).toBe(250);
    expect(shown).toEqual([100, 600, 1100]);
    // the speed comes from every event, not only the shown ones: 100 bytes per 50 ms
    expect(transfer.speed).toBeCloseTo(2000);
    request.answer(200);
    await done;
    expect(transfer.loaded).toBe(3000);
    vi.restoreAllMocks();
  });

  it("keeps the gateway's error when the upload is refused", async () => {
    const transfer = new Transfer({ relativePath: "big.bin", file }, "");
    const done = transfer.run("/upload", "s");
    sent().answer(502, '{"error":"the server went away","code":"remote_failed"}');
    await done;
    expect(transfer.state).toBe("failed");
    expect(transfer.error?.code).toBe("remote_failed");
    expect(transfer.error?.status).toBe(502);
  });

  it("cancels: a running request is aborted, a queued one never starts", async () => {
    const running = new Transfer({ relativePath: "a.bin", file }, "");
    const done = running.run("/upload", "s");
    running.cancel();
    await done;
    expect(running.state).toBe("cancelled");

    RecordedRequest.last = null;
    const queued = new Transfer({ relativePath: "b.bin", file }, "");
    queued.cancel();
    await queued.run("/upload", "s");
    expect(queued.state).toBe("cancelled");
    expect(RecordedRequest.last).toBeNull();
  });
});
