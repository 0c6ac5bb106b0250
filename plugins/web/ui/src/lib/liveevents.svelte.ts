// The open app's live channel: one /ws/events socket (docs/api.md, "Live updates") that
// says when something a page shows changed; the page fetches it again from the API.
// Pages read `live.accessRequests` (it goes up with each change) in an $effect.
import { api, call } from "../api/client";
import type { AccessRequest } from "./accessrequests";
import { eventsUrl, liveRetryDelay, parseLiveFrame } from "./livechannel";
import type { HeldCommand } from "../screens/admin/commandrules/commandrules";
import { approvesCommands } from "./heldcommands";
import type { Invitation } from "./invitations";
import { can, session } from "./session.svelte";

export const live = $state({
  /** Goes up whenever access requests changed for this user (asked, decided, ended). */
  accessRequests: 0,
  /** Requests waiting for a decision, for those who may decide (access.approve); else 0. */
  waiting: 0,
  /** Goes up whenever held commands changed (held, decided, withdrawn). */
  heldCommands: 0,
  /** Commands held for approval, for those who may decide them; else 0. */
  held: 0,
  /** Open invitations to join a live terminal, made to this user or by them (GET /sessions/invitations). */
  invitations: [] as Invitation[],
});

let socket: WebSocket | null = null;
let running = false;
let attempt = 0;
let timer = 0;

async function countWaiting(): Promise<void> {
  if (!can("access.approve")) {
    live.waiting = 0;
    return;
  }
  try {
    const body = await call<{ requests: AccessRequest[] }>(
      api.GET("/api/v1/access-requests", { params: { query: { all: "true", status: "pending" } } }),
    );
    live.waiting = body.requests.length;
  } catch {
    // the badge keeps its last count; the next change asks again
  }
}

async function countHeld(): Promise<void> {
  if (!approvesCommands(session.me?.permissions ?? [])) {
    live.held = 0;
    return;
  }
  try {
    live.held = (await call<{ held: HeldCommand[] }>(api.GET("/api/v1/command-rules/held"))).held.length;
  } catch {
    // the badge keeps its last count; the next change asks again
  }
}

async function fetchInvitations(): Promise<void> {
  try {
    live.invitations = (await call<{ invitations: Invitation[] }>(api.GET("/api/v1/sessions/invitations"))).invitations;
  } catch {
    // the notices keep what they showed; the next change asks again
  }
}

async function open(): Promise<void> {
  if (!running) return;
  let ticket: string;
  try {
    ticket = (await call<{ ticket: string }>(api.POST("/api/v1/auth/ws-ticket"))).ticket;
  } catch {
    retry(0);
    return;
  }
  if (!running) return;
  const next = new WebSocket(eventsUrl(window.location, ticket));
  socket = next;
  next.onmessage = (event) => {
    const frame = parseLiveFrame(String(event.data));
    if (frame === "ready") {
      attempt = 0;
      // what changed while the socket was away (or before it opened) is fetched now
      live.accessRequests += 1;
      void countWaiting();
      live.heldCommands += 1;
      void countHeld();
      void fetchInvitations();
    } else if (frame === "session-invitations") {
      void fetchInvitations();
    } else if (frame === "held-commands") {
      live.heldCommands += 1;
      void countHeld();
    } else if (frame === "access-requests") {
      live.accessRequests += 1;
      void countWaiting();
    }
  };
  next.onclose = (event) => {
    if (socket !== next) return;
    socket = null;
    retry(event.code);
  };
}

function retry(code: number): void {
  const delay = liveRetryDelay(code, attempt);
  if (!running || delay === null) return;
  attempt += 1;
  timer = window.setTimeout(() => void open(), delay);
}

/** Open the live channel for the signed-in app; the function it returns closes it. */
export function startLiveEvents(): () => void {
  running = true;
  attempt = 0;
  void open();
  return () => {
    running = false;
    window.clearTimeout(timer);
    const current = socket;
    socket = null;
    current?.close(1000, "Signed out");
    live.waiting = 0;
    live.held = 0;
    live.invitations = [];
  };
}
