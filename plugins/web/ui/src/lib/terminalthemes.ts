// Terminal colour themes by the names the `ssh.theme` setting and the profile's `theme`
// preference use; shaped like xterm.js's ITheme so a terminal can take them as they are.

export interface TerminalTheme {
  background: string;
  foreground: string;
  cursor: string;
  selectionBackground: string;
  black: string;
  red: string;
  green: string;
  yellow: string;
  blue: string;
  magenta: string;
  cyan: string;
  white: string;
}

export const TERMINAL_THEMES: Record<string, { label: string; theme: TerminalTheme }> = {
  "vscode-dark": {
    label: "VS Code dark",
    theme: {
      background: "#1e1e1e", foreground: "#d4d4d4", cursor: "#aeafad", selectionBackground: "#264f78",
      black: "#000000", red: "#cd3131", green: "#0dbc79", yellow: "#e5e510",
      blue: "#2472c8", magenta: "#bc3fbc", cyan: "#11a8cd", white: "#e5e5e5",
    },
  },
  "vscode-light": {
    label: "VS Code light",
    theme: {
      background: "#ffffff", foreground: "#333333", cursor: "#333333", selectionBackground: "#add6ff",
      black: "#000000", red: "#cd3131", green: "#00bc00", yellow: "#949800",
      blue: "#0451a5", magenta: "#bc05bc", cyan: "#0598bc", white: "#555555",
    },
  },
  "solarized-dark": {
    label: "Solarized dark",
    theme: {
      background: "#002b36", foreground: "#93a1a1", cursor: "#93a1a1", selectionBackground: "#073642",
      black: "#073642", red: "#dc322f", green: "#859900", yellow: "#b58900",
      blue: "#268bd2", magenta: "#d33682", cyan: "#2aa198", white: "#eee8d5",
    },
  },
  "solarized-light": {
    label: "Solarized light",
    theme: {
      background: "#fdf6e3", foreground: "#586e75", cursor: "#586e75", selectionBackground: "#eee8d5",
      black: "#073642", red: "#dc322f", green: "#859900", yellow: "#b58900",
      blue: "#268bd2", magenta: "#d33682", cyan: "#2aa198", white: "#eee8d5",
    },
  },
  dracula: {
    label: "Dracula",
    theme: {
      background: "#282a36", foreground: "#f8f8f2", cursor: "#f8f8f2", selectionBackground: "#44475a",
      black: "#21222c", red: "#ff5555", green: "#50fa7b", yellow: "#f1fa8c",
      blue: "#bd93f9", magenta: "#ff79c6", cyan: "#8be9fd", white: "#f8f8f2",
    },
  },
};

/** The theme called `name`, or the default (`vscode-dark`) for a name this app does not know. */
export function terminalTheme(name: string): TerminalTheme {
  return (TERMINAL_THEMES[name] ?? TERMINAL_THEMES["vscode-dark"]).theme;
}
