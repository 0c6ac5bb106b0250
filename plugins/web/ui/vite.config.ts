import { svelte } from "@sveltejs/vite-plugin-svelte";
import { defineConfig } from "vitest/config";

// The build lands inside the Python package, which serves it (hostgate_web/static).
export default defineConfig({
  plugins: [svelte()],
  base: "/",
  build: {
    outDir: "../src/hostgate_web/static",
    emptyOutDir: true,
    assetsDir: "assets",
    // no inline script anywhere: the CSP allows only files from this origin
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    target: "es2022",
    sourcemap: false,
    reportCompressedSize: false,
  },
  server: {
    proxy: {
      "/api": "http://127.0.0.1:7443",
      "/ws": { target: "ws://127.0.0.1:7443", ws: true },
    },
  },
  test: {
    environment: "node",
    include: ["src/**/*.test.ts"],
  },
});
