import { svelte } from "@sveltejs/vite-plugin-svelte";
import type { Plugin } from "vite";
import { defineConfig } from "vitest/config";

/**
 * IronRDP's package inlines its WASM as a base64 data: URL. The build writes it out as
 * a hashed assets/ironrdp-*.wasm file instead, which the gateway serves as
 * application/wasm like any other asset: the page needs no `connect-src data:`, and
 * the browser compiles the module while it downloads.
 */
function ironrdpWasmFile(): Plugin {
  return {
    name: "hostgate-ironrdp-wasm-file",
    apply: "build",
    transform(code, id) {
      if (!id.includes("iron-remote-desktop-rdp")) return null;
      const inline = /"data:application\/wasm;base64,([A-Za-z0-9+/=]+)"/.exec(code);
      if (!inline) this.error("IronRDP's inline WASM module was not found: its packaging changed");
      const bytes = Uint8Array.from(atob(inline[1]), (c) => c.charCodeAt(0));
      const ref = this.emitFile({ type: "asset", name: "ironrdp.wasm", source: bytes });
      const url = `new URL(import.meta.ROLLUP_FILE_URL_${ref}, import.meta.url)`;
      return { code: code.slice(0, inline.index) + url + code.slice(inline.index + inline[0].length), map: null };
    },
  };
}

// The build lands inside the Python package, which serves it (hostgate_web/static).
export default defineConfig({
  plugins: [svelte(), ironrdpWasmFile()],
  base: "/",
  resolve: {
    alias: {
      // noVNC's package exports only core/rfb.js; the VNC driver also sets its log level
      "novnc-core": decodeURIComponent(new URL("./node_modules/@novnc/novnc/core", import.meta.url).pathname),
    },
  },
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
