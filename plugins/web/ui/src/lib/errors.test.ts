import { describe, expect, it } from "vitest";
import { ApiError, describeError, fieldError, formatWait } from "./errors";

function response(status: number, headers: Record<string, string> = {}): Response {
  return new Response(null, { status, headers });
}

describe("ApiError.from", () => {
  it("reads the error shape and Retry-After", () => {
    const error = ApiError.from(response(429, { "Retry-After": "90" }), {
      error: "Too many requests",
      code: "rate_limited",
    });
    expect([error.status, error.code, error.message, error.retryAfter]).toEqual([
      429,
      "rate_limited",
      "Too many requests",
      90,
    ]);
  });

  it("survives a body that is not the error shape", () => {
    const error = ApiError.from(response(502), "<html>");
    expect(error.code).toBe("http_502");
    expect(error.retryAfter).toBeNull();
  });
});

describe("describeError", () => {
  it("says wrong password plainly", () => {
    expect(describeError(new ApiError(401, "invalid_credentials", "Invalid username or password"))).toBe(
      "Wrong username or password.",
    );
  });

  it("says a wrong backup password changed nothing", () => {
    const error = new ApiError(422, "invalid_backup_password", "Invalid backup password or corrupted backup file");
    expect(describeError(error)).toBe("That password does not open this backup (or the file is damaged). Nothing was changed.");
  });

  it("says who decides a host key, and why a password is refused, without codes", () => {
    const edit = describeError(new ApiError(403, "host_key_edit_required", "Only someone who may edit ..."));
    expect(edit).toBe("Only the connection's owner (someone who may edit it) can trust its host key. Ask them to check it.");
    const weak = describeError(new ApiError(400, "weak_password", "password is too easy to guess"));
    expect(weak).toContain("too easy to guess");
    expect(weak).not.toContain("weak_password");
  });

  it("tells until when an account is locked", () => {
    const now = new Date(2026, 0, 1, 10, 0, 0);
    const text = describeError(new ApiError(429, "account_locked", "Account locked", 900), now);
    expect(text).toContain("locked");
    expect(text).toContain(new Date(2026, 0, 1, 10, 15).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }));
    expect(text).toContain("15 minutes");
  });

  it("tells a suspended account who can lift it", () => {
    expect(describeError(new ApiError(403, "account_suspended", "This account is suspended"))).toBe(
      "This account is suspended. Ask an administrator to resume it.",
    );
  });

  it("tells how long to wait after a 429", () => {
    expect(describeError(new ApiError(429, "rate_limited", "slow down", 45))).toBe(
      "Too many attempts. Wait 45 seconds and try again.",
    );
  });

  it("never shows a raw server failure", () => {
    expect(describeError(new ApiError(500, "internal_error", "Traceback ..."))).not.toContain("Traceback");
  });

  it("keeps the gateway's own sentence for validation errors", () => {
    expect(describeError(new ApiError(400, "invalid_input", "name is required"))).toBe("name is required.");
  });

  it("explains a network failure", () => {
    expect(describeError(ApiError.network())).toContain("Cannot reach the gateway");
  });
});

describe("formatWait", () => {
  it("rounds up to useful units", () => {
    expect(formatWait(1)).toBe("1 second");
    expect(formatWait(61)).toBe("2 minutes");
    expect(formatWait(3900)).toBe("1 hour 5 minutes");
  });
});

describe("fieldError", () => {
  it("finds the field a validation message names and rewords the rest", () => {
    const error = new ApiError(400, "invalid_input", "email must be an e-mail address (or empty)");
    expect(fieldError(error, ["displayName", "email"])).toEqual({
      field: "email",
      message: "Must be an e-mail address (or empty).",
    });
  });

  it("is null for other fields, other statuses and other errors", () => {
    expect(fieldError(new ApiError(400, "invalid_input", "emailish is odd"), ["email"])).toBeNull();
    expect(fieldError(new ApiError(500, "x", "email broke"), ["email"])).toBeNull();
    expect(fieldError(new Error("email"), ["email"])).toBeNull();
  });
});

describe("file errors", () => {
  it("says permission denied, exists and no space in words", () => {
    expect(describeError(new ApiError(403, "remote_permission_denied", "Permission denied"))).toContain("Permission denied");
    expect(describeError(new ApiError(409, "already_exists", "exists"))).toContain("already exists");
    expect(describeError(new ApiError(502, "remote_full", "No space left on the SFTP server (quota)"))).toBe(
      "The server has no space left for this file.",
    );
    expect(describeError(new ApiError(502, "remote_error", "Failure: No space left on device"))).toBe(
      "The server has no space left for this file.",
    );
  });
});
