// Who is signed in, the instance's public settings and login methods, the signed-out notice.
import { api, call, onSessionEnded } from "../api/client";
import type { Me, Providers, PublicSettings } from "../api/types";
import { idleSignOutNotice } from "./closereason";
import { describeError } from "./errors";
import { forgetTabs } from "./tabs.svelte";

export type Phase = "loading" | "setup" | "signin" | "app" | "unreachable";

export const session = $state({
  phase: "loading" as Phase,
  me: null as Me | null,
  settings: {} as PublicSettings,
  providers: null as Providers | null,
  /** Shown on the sign-in screen: why the user is there (idle timeout, SSO error...). */
  notice: "",
  noticeKind: "info" as "info" | "danger",
  /** Single sign-on came back with hostgate's second step due (/?sso=second_step). */
  ssoSecondStep: false,
});

/** A public setting with a fallback. */
export function setting<T>(key: string, fallback: T): T {
  const value = session.settings[key];
  return value === undefined || value === null ? fallback : (value as T);
}

/** True when the signed-in user's role holds `permission` (the API still decides). */
export function can(permission: string): boolean {
  return session.me?.permissions.includes(permission) ?? false;
}

/** Load the public settings (instance name, logo, login switches). */
export async function loadSettings(): Promise<void> {
  const body = await call<{ settings: PublicSettings }>(api.GET("/api/v1/settings/public"));
  session.settings = body.settings;
  document.title = setting("app.name", "hostgate");
}

let providersRequest: Promise<Providers> | null = null;

/** The login methods (GET /auth/providers), asked once and shared. */
export function loadProviders(): Promise<Providers> {
  providersRequest ??= call<Providers>(api.GET("/api/v1/auth/providers")).catch((error) => {
    providersRequest = null;
    throw error;
  });
  return providersRequest;
}

/** Decide where to start: setup, sign-in or the app (the first requests go out together). */
export async function start(): Promise<void> {
  try {
    const status = call<{ needsSetup: boolean }>(api.GET("/api/v1/auth/status"));
    const me = refreshMe(false);
    me.catch(() => undefined); // awaited below; never an unhandled rejection meanwhile
    void loadProviders().catch(() => undefined); // the sign-in screen will want them
    await loadSettings();
    if ((await status).needsSetup) {
      session.phase = "setup";
      return;
    }
    await me;
    session.phase = session.me ? "app" : "signin";
  } catch (error) {
    if (session.phase === "loading") {
      session.notice = describeError(error);
      session.phase = "unreachable";
    }
  }
}

/** Fetch `/auth/me`: the app when signed in, the sign-in screen otherwise (`show` false: only load). */
export async function refreshMe(show = true): Promise<void> {
  try {
    session.me = await call<{ user: Me }>(api.GET("/api/v1/auth/me")).then((b) => b.user);
    if (show) session.phase = "app";
  } catch (error) {
    session.me = null;
    if (show) session.phase = "signin";
    if (!(error instanceof Error && "status" in error && (error as { status: number }).status === 401)) {
      throw error;
    }
  }
}

/** Leave the app for the sign-in screen with a notice. */
export function signedOut(notice = "", kind: "info" | "danger" = "info"): void {
  forgetTabs(); // their shells were this sign-in's: a new one cannot re-attach to them
  session.me = null;
  session.notice = notice;
  session.noticeKind = kind;
  session.phase = "signin";
}

/** End the session on the server (and its cookie), then show sign-in. */
export async function logout(): Promise<void> {
  try {
    await call(api.POST("/api/v1/auth/logout"));
  } finally {
    signedOut("You are signed out.");
  }
}

onSessionEnded((error) => {
  if (session.phase !== "app") return;
  if (error.code === "session_idle_timeout") signedOut(idleSignOutNotice(Number(setting("security.idle_timeout_minutes", 0))), "info");
  else signedOut(describeError(error), "danger");
});
