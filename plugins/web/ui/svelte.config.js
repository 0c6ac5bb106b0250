import { vitePreprocess } from "@sveltejs/vite-plugin-svelte";

export default {
  preprocess: vitePreprocess(),
  compilerOptions: {
    // styles go to the CSS file, never into <style> tags the CSP would block
    css: "external",
  },
};
