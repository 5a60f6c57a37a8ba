import { fileURLToPath } from "node:url";
import preact from "@preact/preset-vite";
import { defineConfig } from "vite";

// Built into console/dist and served by the API at /console/ (api/console/static.ts); nothing from a CDN.
export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "/console/",
  plugins: [preact({ devtoolsInProd: false, prefreshEnabled: false })],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    // The API's Content-Security-Policy allows no inline code.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
  server: {
    // `npx vite console` during development: the API on its default port answers /v3 and /v4.
    proxy: { "/v3": "http://127.0.0.1:8787", "/v4": "http://127.0.0.1:8787" },
  },
});
