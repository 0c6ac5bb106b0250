// The terminal's default font, "DejaVu Sans Mono" (ssh.font_family), shipped with the app
// from npm (@fontsource/dejavu-mono, Latin), never from a CDN: a browser without it installed
// drew the fallback font, whose underscore fell below xterm.js's cell (".bash_logout" read
// ".bash logout"). Loaded before a terminal measures its cells, with the first terminal.
import bold from "@fontsource/dejavu-mono/files/dejavu-mono-latin-700-normal.woff2?url";
import regular from "@fontsource/dejavu-mono/files/dejavu-mono-latin-400-normal.woff2?url";

/** The terminals' line height (a multiple of the font's): DejaVu Sans Mono draws "_" below
 * its cell, which xterm.js's DOM renderer clips away at 1 (xterm.js issue 4067). */
export const LINE_HEIGHT = 1.1;

/** The family name the default settings use; the shipped faces are registered under it. */
export const DEFAULT_FONT_FAMILY = "DejaVu Sans Mono";

let loading: Promise<void> | null = null;

/** Register the shipped faces (once per page) and wait until they can draw; a face that
 * fails to load leaves the fallback (the page still works). */
export function loadTerminalFont(): Promise<void> {
  loading ??= Promise.all(
    [
      ["400", regular],
      ["700", bold],
    ].map(async ([weight, url]) => {
      const face = new FontFace(DEFAULT_FONT_FAMILY, `url(${url}) format("woff2")`, { weight, style: "normal" });
      document.fonts.add(face);
      await face.load();
    }),
  ).then(
    () => undefined,
    () => undefined,
  );
  return loading;
}
