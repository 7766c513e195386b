// A Vite dev-server plugin that serves folders byte for byte (no Vite transforms, no injected client),
// cross-origin isolated like every tenon page. Used by the e2e server (built bundles and examples under
// /static/, the model fixtures under /models/) and by the demo server (/models/ for local runs with the
// stories260K fixture in ../shared/models, never copied into the repository).
// Contract: GET and HEAD only; a path that leaves its folder, names a folder, or does not exist is
// passed on to the next middleware (which answers 404). Nothing is cached (Cache-Control: no-store), so a
// second page load that fetches a file shows up as a second request.
import { createReadStream, statSync } from 'node:fs';
import { extname, resolve, sep } from 'node:path';
import type { Plugin } from 'vite';
import { crossOriginIsolationHeaders } from './chromium.config.js';

export interface StaticRoute {
  /** URL prefix, with a trailing slash: '/static/'. */
  readonly prefix: string;
  /** Folder the prefix maps to (absolute, or relative to the working directory). */
  readonly dir: string;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.ts': 'text/plain; charset=utf-8',
  '.md': 'text/plain; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.wasm': 'application/wasm',
};

export function staticFiles(routes: readonly StaticRoute[]): Plugin {
  const folders = routes.map((r) => ({ prefix: r.prefix, dir: resolve(r.dir) }));
  return {
    name: 'tenon-static-files',
    configureServer(server) {
      server.middlewares.use((req, res, next) => {
        if (req.method !== 'GET' && req.method !== 'HEAD') return next();
        const pathname = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
        const route = folders.find((r) => pathname.startsWith(r.prefix));
        if (route === undefined) return next();
        const file = resolve(route.dir, `.${sep}${pathname.slice(route.prefix.length)}`);
        if (file !== route.dir && !file.startsWith(route.dir + sep)) return next();
        let size: number;
        try {
          const st = statSync(file);
          if (!st.isFile()) return next();
          size = st.size;
        } catch {
          return next();
        }
        res.statusCode = 200;
        for (const [k, v] of Object.entries(crossOriginIsolationHeaders)) res.setHeader(k, v);
        res.setHeader('Content-Type', TYPES[extname(file)] ?? 'application/octet-stream');
        res.setHeader('Content-Length', String(size));
        res.setHeader('Cache-Control', 'no-store');
        if (req.method === 'HEAD') return res.end();
        createReadStream(file).pipe(res);
      });
    },
  };
}
