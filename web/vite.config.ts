/// <reference types="vitest/config" />
import { svelte } from "@sveltejs/vite-plugin-svelte";
import { svelteTesting } from "@testing-library/svelte/vite";
import { defineConfig } from "vite";

// `npm run build` is the deployable page (web/dist); `npm run build:local` (mode "localstack": Vite
// refuses the mode name "local", which clashes with its .env.local files) adds the demo sign-in for
// the local stack and writes web/dist-local. Both serve under /agent/.
export default defineConfig(({ mode }) => ({
  base: "/agent/",
  plugins: [svelte(), svelteTesting()],
  build: {
    outDir: mode === "localstack" ? "dist-local" : "dist",
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    reportCompressedSize: true,
  },
  server: {
    // `npm run dev` against the local stack (make run serves it on 127.0.0.1:8000).
    proxy: {
      "/api": "http://127.0.0.1:8000",
      "/local": "http://127.0.0.1:8000",
    },
  },
  test: {
    environment: "jsdom",
    include: ["src/**/*.test.ts"],
    globals: true,
    setupFiles: ["src/test-setup.ts"],
  },
}));
