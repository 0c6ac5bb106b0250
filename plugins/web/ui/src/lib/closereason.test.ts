import { describe, expect, it } from "vitest";
import { closeReason, desktopCloseReason, idleSignOutNotice, isSignedOut } from "./closereason";

// the reasons are the server's own texts (kernel/src/hostgate/services/sessions, the packs)
describe("closeReason", () => {
  it("says plainly that the server ended the session", () => {
    expect(closeReason(1000, "Shell closed", "")).toBe("The server closed the connection (the shell ended).");
    expect(closeReason(1000, "Connection closed", "")).toBe("The server closed the connection.");
    expect(closeReason(4003, "Connection lost: SSH connection lost: Connection lost", "")).toBe("The connection to the server was lost.");
    expect(closeReason(4003, "Connection lost: [Errno 104] Connection reset by peer", "")).toBe(
      "The connection to the server was lost: the connection was reset by the other side.",
    );
    expect(closeReason(1001, "Server shutting down", "")).toBe("The gateway is shutting down or restarting. Reconnect in a moment.");
  });

  it("names the idle timeout and its minutes", () => {
    expect(closeReason(4003, "Closed after 15 minute(s) without input", "")).toBe("Idle timeout: closed after 15 minutes without input.");
    expect(closeReason(4003, "Closed after 1 minute(s) without input", "")).toBe("Idle timeout: closed after 1 minute without input.");
  });

  it("says a desktop ended because its recording upload stopped", () => {
    const said = "Recording required: this desktop's recording stopped reaching the gateway for 30 s, so the session was ended.";
    expect(closeReason(4003, "Recording required: no recording upload for 30 s; the session was ended", "")).toBe(said);
    expect(closeReason(4003, "", "", "recording_missing")).toBe(
      "Recording required: this desktop's recording stopped reaching the gateway, so the session was ended.",
    );
  });

  it("reads the changed host key from the error frame, not the cut close reason", () => {
    const full =
      "The SSH host key of lab-ssh has changed: trusted SHA256:aaa (ssh-ed25519), presented SHA256:bbb (ssh-ed25519). " +
      "Refusing to connect until someone who may edit the connection accepts the new key.";
    const said = closeReason(4003, full.slice(0, 120), full);
    expect(said).toBe(
      "Host key changed: lab-ssh presented SHA256:bbb instead of the trusted SHA256:aaa. " +
        "Someone who may edit the connection must accept the new key before it connects again.",
    );
    expect(closeReason(4003, "SSH host key changed during connect: key mismatch", "")).toBe("Host key changed while connecting: key mismatch.");
  });

  it("says that credentials were refused, with the server's detail", () => {
    expect(closeReason(4003, "", "SSH authentication failed: Permission denied")).toBe(
      "Authentication failed: the SSH server refused the connection's credentials: Permission denied.",
    );
    expect(closeReason(4003, "VNC authentication failed: wrong password", "")).toBe(
      "Authentication failed: the VNC server refused the connection's credentials: wrong password.",
    );
    expect(closeReason(4007, "Authentication timeout", "")).toBe("No password was entered in time: the server stopped waiting.");
  });

  it("tells a network policy refusal from an unreachable target", () => {
    expect(closeReason(4003, "", "The network policy does not allow connecting to 10.0.0.5:22: private addresses are blocked")).toBe(
      "Refused by the gateway's network policy: connecting to 10.0.0.5:22 is not allowed (private addresses are blocked).",
    );
    expect(closeReason(4003, "The connection's target cannot be reached", "")).toBe(
      "The server cannot be reached: it is down, or the gateway may not connect to it.",
    );
  });

  it("explains access that ended while the session ran", () => {
    expect(closeReason(4003, "the connection was deleted", "")).toBe("The connection was deleted.");
    expect(closeReason(4003, "the connection is no longer shared with you", "")).toBe("The connection is no longer shared with you.");
    expect(closeReason(4003, "Permission connections.use_ssh was withdrawn", "")).toBe(
      "Your role no longer allows this connection (permission connections.use_ssh was withdrawn).",
    );
    expect(closeReason(4003, "Session opened in another window", "")).toBe("This session was opened in another window or tab.");
  });

  it("always says 'Signed out' for 4001", () => {
    expect(closeReason(4001, "Session has been revoked", "")).toBe("Signed out: your sign-in was ended (revoked).");
    expect(closeReason(4001, "Invalid or expired ticket", "")).toBe("Signed out: your sign-in has expired. Sign in again.");
    expect(closeReason(4001, "user deleted", "")).toBe("Signed out: your account was deleted.");
    expect(closeReason(4001, "something new", "")).toBe("Signed out: Something new.");
    expect(closeReason(4001, "", "")).toBe("Signed out: your sign-in has ended. Sign in again.");
    expect(isSignedOut(4001)).toBe(true);
    expect(isSignedOut(4003)).toBe(false);
  });

  it("keeps the server's words it does not know, as a sentence", () => {
    expect(closeReason(4003, "Terminated by admin: maintenance window", "")).toBe("Terminated by admin: maintenance window.");
    expect(closeReason(4003, "Cannot reach the VNC server at 127.0.0.1:5901", "")).toBe("Cannot reach the VNC server at 127.0.0.1:5901.");
    expect(closeReason(4008, "Maximum 10 concurrent sessions per user.", "")).toBe(
      "Too many sessions are open: Maximum 10 concurrent sessions per user. Close one and try again.",
    );
  });

  it("falls back on the close code without words", () => {
    expect(closeReason(1006, "", "")).toBe("The connection to the gateway was lost (the network, or the gateway stopped).");
    expect(closeReason(1009, "", "")).toBe("A message was too big for the gateway (more than 4 MiB).");
    expect(closeReason(4002, "", "")).toBe("This connection does not exist any more, or you may not see it.");
    expect(closeReason(1000, "", "")).toBe("The session ended (code 1000).");
  });
});

// the error frame's `reason` (kernel/src/hostgate/closereasons.py): the code decides, the text adds the detail
describe("closeReason with the server's reason code", () => {
  it("says what the code means when the text is reworded", () => {
    expect(closeReason(4003, "", "No keystrokes for a quarter of an hour", "idle_timeout")).toBe("Idle timeout: closed after a while without input.");
    expect(closeReason(4003, "", "Fingerprint mismatch for lab-ssh", "host_key_changed")).toBe("The server's host key changed: Fingerprint mismatch for lab-ssh.");
    expect(closeReason(4003, "", "Login refused: bad password", "auth_failed")).toBe(
      "Authentication failed: the server refused the connection's credentials: Login refused: bad password.",
    );
    expect(closeReason(4003, "", "10.0.0.5 is blocked here", "network_policy")).toBe("Refused by the gateway's network policy: 10.0.0.5 is blocked here.");
    expect(closeReason(4003, "", "Nobody answers on 127.0.0.1:2323", "unreachable")).toBe("The server cannot be reached: Nobody answers on 127.0.0.1:2323.");
    expect(closeReason(1000, "The shell exited", "The shell exited", "shell_closed")).toBe("The server closed the connection (the shell ended).");
    expect(closeReason(4003, "", "Moved to tab 2", "opened_elsewhere")).toBe("This session was opened in another window or tab.");
    expect(closeReason(4001, "", "Ticket no good", "ticket_invalid")).toBe("Signed out: your sign-in has expired. Sign in again.");
    expect(closeReason(4001, "", "account removed", "user_deleted")).toBe("Signed out: your account was deleted.");
    expect(closeReason(4003, "", "gone", "connection_deleted")).toBe("The connection was deleted.");
    expect(closeReason(1001, "Bye", "Bye", "shutting_down")).toBe("The gateway is shutting down or restarting. Reconnect in a moment.");
    expect(closeReason(4007, "Authentication timeout", "Authentication timeout", "auth_timeout")).toBe(
      "No password was entered in time: the server stopped waiting.",
    );
    expect(closeReason(4007, "", "Expected an auth message", "auth_timeout")).toBe("Expected an auth message.");
  });

  it("keeps the detail of the message: fingerprints, host, minutes, permission", () => {
    const full =
      "The SSH host key of lab-ssh has changed: trusted SHA256:aaa (ssh-ed25519), presented SHA256:bbb (ssh-ed25519). " +
      "Refusing to connect until someone who may edit the connection accepts the new key.";
    expect(closeReason(4003, full.slice(0, 120), full, "host_key_changed")).toBe(
      "Host key changed: lab-ssh presented SHA256:bbb instead of the trusted SHA256:aaa. " +
        "Someone who may edit the connection must accept the new key before it connects again.",
    );
    const unconfirmed =
      "The SSH host key of lab-ssh (10.0.0.5:22) is not trusted yet: it presents SHA256:ccc (ssh-ed25519). " +
      "This gateway connects only once someone who may edit the connection has checked and accepted its first key.";
    expect(closeReason(4003, unconfirmed.slice(0, 120), unconfirmed, "host_key_unconfirmed")).toBe(
      "Host key not trusted yet: lab-ssh (10.0.0.5:22) presents SHA256:ccc. " +
        "Someone who may edit the connection must check and accept it before anyone connects.",
    );
    expect(closeReason(4003, "", "Closed after 15 minute(s) without input", "idle_timeout")).toBe("Idle timeout: closed after 15 minutes without input.");
    expect(closeReason(4003, "", "SSH authentication failed: Permission denied", "auth_failed")).toBe(
      "Authentication failed: the SSH server refused the connection's credentials: Permission denied.",
    );
    expect(closeReason(4003, "", "The network policy does not allow connecting to 10.0.0.5:22: private addresses are blocked", "network_policy")).toBe(
      "Refused by the gateway's network policy: connecting to 10.0.0.5:22 is not allowed (private addresses are blocked).",
    );
    expect(closeReason(4003, "", "Permission connections.use_ssh was withdrawn", "permission_withdrawn")).toBe(
      "Your role no longer allows this connection (permission connections.use_ssh was withdrawn).",
    );
    expect(closeReason(4003, "", "Terminated by admin: maintenance window", "terminated")).toBe("Terminated by admin: maintenance window.");
    expect(closeReason(4001, "logout", "logout", "revoked")).toBe("Signed out: your sign-in was ended (logout).");
    expect(closeReason(4008, "", "Maximum 3 concurrent sessions per user.", "session_limit")).toBe(
      "Too many sessions are open: Maximum 3 concurrent sessions per user. Close one and try again.",
    );
  });

  it("lets the code win over a text that reads like another reason", () => {
    // a lost connection whose text happens to say "Connection closed" is still a lost connection
    expect(closeReason(4003, "", "Connection closed", "connection_lost")).toBe("The connection to the server was lost: Connection closed.");
    // the concealed refusal of a user who may not create connections reads "unreachable" either way
    expect(closeReason(4003, "", "The connection's target cannot be reached", "unreachable")).toBe(
      "The server cannot be reached: it is down, or the gateway may not connect to it.",
    );
  });

  it("matches the text when the code is absent or unknown (an older or a newer server)", () => {
    expect(closeReason(1000, "Shell closed", "Shell closed", "")).toBe("The server closed the connection (the shell ended).");
    expect(closeReason(1000, "Shell closed", "Shell closed", "a_code_from_the_future")).toBe("The server closed the connection (the shell ended).");
    expect(closeReason(4003, "", "Session opened in another window", "constructor")).toBe("This session was opened in another window or tab.");
    expect(closeReason(4003, "", "Something new", "a_code_from_the_future")).toBe("Something new.");
  });
});

describe("idleSignOutNotice", () => {
  it("names the idle timeout's minutes", () => {
    expect(idleSignOutNotice(1)).toBe("Idle timeout: you were signed out after 1 minute without activity.");
    expect(idleSignOutNotice(30)).toBe("Idle timeout: you were signed out after 30 minutes without activity.");
    expect(idleSignOutNotice(0)).toBe("Idle timeout: you were signed out because the session was idle too long.");
  });
});

describe("desktopCloseReason", () => {
  it("tells an ended access from other closes (a desktop relay sends no reason code)", () => {
    expect(desktopCloseReason(4003, "your access to this connection ended")).toBe("access_ended");
    expect(desktopCloseReason(4003, "your access to the jump host bastion ended")).toBe("access_ended");
    expect(desktopCloseReason(4003, "Connection lost: reset")).toBe("");
    expect(desktopCloseReason(1000, "your access to this connection ended")).toBe("");
  });
});
