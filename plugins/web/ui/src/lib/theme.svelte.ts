// The colour theme: "system" follows the device (prefers-color-scheme), "light" and "dark"
// force one. Remembered in this browser (localStorage), not per account: the same person
// may want a dark phone and a light office screen. tokens.css does the rest.
import { parseTheme, type ThemeChoice } from "./themechoice";

const KEY = "hostgate.theme";

function stored(): ThemeChoice {
  try {
    return parseTheme(localStorage.getItem(KEY));
  } catch {
    return "system"; // storage refused (privacy settings): follow the system
  }
}

export const theme = $state({ choice: stored() });

/** Put the choice on <html data-theme>; "system" removes it. */
export function applyTheme(choice: ThemeChoice = theme.choice): void {
  if (choice === "system") delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = choice;
}

/** Choose a theme for this browser. */
export function setTheme(choice: ThemeChoice): void {
  theme.choice = choice;
  try {
    if (choice === "system") localStorage.removeItem(KEY);
    else localStorage.setItem(KEY, choice);
  } catch {
    // not remembered, still applied
  }
  applyTheme(choice);
}
