/**
 * The web page (web/, built into web/dist at install): GET or HEAD `/` answers its index.html and
 * `/assets/NAME` the built, content-hashed files; every other request passes on (so `/` is a 404
 * when the page is off or not built). Static files only: they need no key and hold no data (the
 * page asks the API for everything, sending the user's key). Each answer carries a strict
 * Content-Security-Policy: scripts, styles, fonts and connections from this origin only, no
 * inline script, pictures also from data:/blob: URLs (previews of images the user picks).
 * index.html is revalidated on every load (ETag); the hashed assets are cached for a year.
 * Files are read once, when the app is created.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type Koa from 'koa';
import type { RequestState } from './app-deps.ts';

/** Where `npm run web:build` writes the page. */
export const DEFAULT_WEB_DIR = fileURLToPath(new URL('../web/dist/', import.meta.url));

export const WEB_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

interface WebFile {
  readonly body: Buffer;
  readonly type: string;
  readonly etag: string;
  readonly cacheControl: string;
}

/** The page's files by URL path, or undefined when `dir` holds no built page (no index.html). */
export function loadWebFiles(dir: string = DEFAULT_WEB_DIR): Map<string, WebFile> | undefined {
  const index = path.join(dir, 'index.html');
  if (!isFile(index)) return undefined;
  const files = new Map<string, WebFile>([['/', webFile(index, 'no-cache')]]);
  const assets = path.join(dir, 'assets');
  const names = isDirectory(assets) ? readdirSync(assets) : [];
  for (const name of names) {
    const file = path.join(assets, name);
    if (isFile(file)) files.set(`/assets/${name}`, webFile(file, 'public, max-age=31536000, immutable'));
  }
  return files;
}

function webFile(file: string, cacheControl: string): WebFile {
  const body = readFileSync(file);
  return {
    body,
    type: TYPES[path.extname(file)] ?? 'application/octet-stream',
    etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
    cacheControl,
  };
}

function isFile(file: string): boolean {
  return statSync(file, { throwIfNoEntry: false })?.isFile() === true;
}

function isDirectory(dir: string): boolean {
  return statSync(dir, { throwIfNoEntry: false })?.isDirectory() === true;
}

export function webPage(files: ReadonlyMap<string, WebFile>): Koa.Middleware<RequestState> {
  return async (ctx, next) => {
    const file = ctx.method === 'GET' || ctx.method === 'HEAD' ? files.get(ctx.path) : undefined;
    if (file === undefined) return next();
    ctx.state.operationId = 'webPage';
    ctx.set('Content-Security-Policy', WEB_CSP);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('Cross-Origin-Opener-Policy', 'same-origin');
    ctx.set('Cross-Origin-Resource-Policy', 'same-origin');
    ctx.set('Cache-Control', file.cacheControl);
    ctx.etag = file.etag;
    ctx.type = file.type;
    ctx.status = 200;
    if (ctx.fresh) {
      ctx.status = 304;
      return;
    }
    ctx.body = file.body;
  };
}
