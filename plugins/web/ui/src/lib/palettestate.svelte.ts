// Whether the command palette is open (the top bar's button and Ctrl+K open it).
export const commandPalette = $state({ open: false });
