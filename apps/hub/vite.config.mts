import tailwindcss from '@tailwindcss/vite';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

/** The server's REST and agent routes, proxied in development so the Hub keeps one origin, as in production. */
const API_PATHS = ['/auth', '/agent', '/audit-log', '/campuses', '/branding', '/health', '/ready'];
const SERVER = process.env['HUB_DEV_SERVER'] ?? 'http://127.0.0.1:3000';

export default defineConfig({
  root: import.meta.dirname,
  // Served by the NestJS server under /hub/ in production (same origin, same JWT login).
  base: '/hub/',
  resolve: { conditions: ['@naalya/source'] },
  plugins: [react(), tailwindcss()],
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: true },
  server: {
    port: 4200,
    host: '127.0.0.1',
    proxy: Object.fromEntries(API_PATHS.map((path) => [path, { target: SERVER, changeOrigin: false }])),
  },
});
