// A Vite dev-server plugin that serves gzip-compressed files decompressed, under the name without `.gz`:
// GET <prefix>NAME answers with the bytes of gunzip(<dir>/NAME.gz) when <dir>/NAME itself does not exist.
// The GGUF fixtures are stored as ../shared/models/gguf/*.gguf.gz; with this plugin a page fetches
// /models/gguf/tiny-qwen2-Q4_K_M.gguf as a user fetches a .gguf from a model hub (a plain body with
// Content-Length, no Content-Encoding). Used by the e2e server and the demo server.
// Contract: GET and HEAD only; a path that leaves its folder, or whose .gz does not exist, is passed on
// to the next middleware. Decompressed files are kept in memory (the fixtures are tens of MB) until the
// server stops; the .gz's modification time invalidates the copy. Cross-origin isolated like every tenon
// page, and never cached by the browser (Cache-Control: no-store), so every fetch shows up as a request.
import { readFileSync, statSync } from 'node:fs';
import { resolve, sep } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { Plugin } from 'vite';
import { crossOriginIsolationHeaders } from './chromium.config.js';

const GZ = '.gz';

export function gunzippedFiles(route: { readonly prefix: string; readonly dir: string }): Plugin {
  const dir = resolve(route.dir);
  const kept = new Map<string, { readonly mtimeMs: number; readonly bytes: Buffer }>();
  return {
    name: 'tenon-gunzipped-files',
    configureServer(server) {
      server.middlewares.use((req, res, next) => {
        if (req.method !== 'GET' && req.method !== 'HEAD') return next();
        const pathname = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
        if (!pathname.startsWith(route.prefix) || pathname.endsWith(GZ)) return next();
        const file = resolve(dir, `.${sep}${pathname.slice(route.prefix.length)}${GZ}`);
        if (!file.startsWith(dir + sep)) return next();
        let mtimeMs: number;
        try {
          const st = statSync(file);
          if (!st.isFile()) return next();
          mtimeMs = st.mtimeMs;
        } catch {
          return next();
        }
        let entry = kept.get(file);
        if (entry === undefined || entry.mtimeMs !== mtimeMs) {
          entry = { mtimeMs, bytes: gunzipSync(readFileSync(file)) };
          kept.set(file, entry);
        }
        res.statusCode = 200;
        for (const [k, v] of Object.entries(crossOriginIsolationHeaders)) res.setHeader(k, v);
        res.setHeader('Content-Type', 'application/octet-stream');
        res.setHeader('Content-Length', String(entry.bytes.length));
        res.setHeader('Cache-Control', 'no-store');
        if (req.method === 'HEAD') return res.end();
        res.end(entry.bytes);
      });
    },
  };
}
