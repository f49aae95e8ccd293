/**
 * What runs before the routes, as exporter-toolkit's handler.go: the web config's extra headers,
 * rate limit and basic auth, and the request body limit.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { WebConfigWatcher } from './watcher.js';

/** Request bodies are never needed (POST /-/reload takes none): anything above this is refused. */
export const MAX_BODY_BYTES = 1024;

/**
 * What runs before the routes: the web config's headers, rate limit and basic auth, and the
 * request body limit (413 above MAX_BODY_BYTES, declared or streamed).
 */
export function guarded(app: (req: IncomingMessage, res: ServerResponse) => void, web: WebConfigWatcher | undefined): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const config = web?.refresh();
    if (config) for (const [k, v] of Object.entries(config.headers)) res.setHeader(k, v);
    if (web?.rateLimiter && !web.rateLimiter.allow()) return void plain(res, 429, 'Too Many Requests\n');
    const declared = Number(req.headers['content-length'] ?? 0);
    if (!(declared <= MAX_BODY_BYTES)) return void tooLarge(req, res);
    const proceed = (): void => {
      if (!config || config.users.size === 0) return void drainBody(req, res, () => app(req, res));
      web!.auth.verify(config.users, req.headers.authorization).then(
        (ok) => {
          if (ok) return drainBody(req, res, () => app(req, res));
          res.setHeader('WWW-Authenticate', 'Basic');
          plain(res, 401, 'Unauthorized\n');
        },
        () => plain(res, 500, 'internal error\n'),
      );
    };
    proceed();
  };
}

/** Reads and drops a body of at most MAX_BODY_BYTES, then `next`; 413 and close when it is longer. */
function drainBody(req: IncomingMessage, res: ServerResponse, next: () => void): void {
  const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  if (!hasBody || req.readableEnded) return next();
  let seen = 0;
  let failed = false;
  req.on('data', (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > MAX_BODY_BYTES && !failed) {
      failed = true;
      tooLarge(req, res);
    }
  });
  req.once('end', () => {
    if (!failed) next();
  });
  req.once('error', () => undefined);
}

function tooLarge(req: IncomingMessage, res: ServerResponse): void {
  res.setHeader('Connection', 'close');
  plain(res, 413, `Request body larger than ${MAX_BODY_BYTES} bytes\n`);
  res.once('finish', () => req.destroy());
}

function plain(res: ServerResponse, status: number, body: string): void {
  if (res.headersSent) return;
  res.statusCode = status;
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}
