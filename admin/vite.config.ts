import { defineConfig } from 'vite';

// Built into admin/dist and served by the gateway's admin listener at /admin (gateway/src/admin/router.ts, listener.ts).
// No inline script: the CSP there has script-src 'self', so the module-preload
// polyfill (an inline helper in older browsers' path) is off.
export default defineConfig({
  base: '/admin/',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
  },
});
