/** HTTP: only the documented routes and methods, with size and time limits. */
import express, { type Request, type Response, type NextFunction } from 'express';
import type { Server } from 'node:http';
import { createServer } from 'node:http';

export interface Routes {
  readonly telemetryPath: string;
  metrics(): Promise<string>;
  landing(): string;
  ready(): boolean;
  reload(): { ok: true } | { ok: false; error: string };
}

// Prometheus' exposition format 0.0.4 content type, as prom-client's Registry reports it.
const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export function buildApp(routes: Routes): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  const allow = (methods: string[]) => (req: Request, res: Response, next: NextFunction) => {
    if (methods.includes(req.method) || (req.method === 'HEAD' && methods.includes('GET'))) return next();
    res.set('Allow', methods.join(', ')).status(405).type('text/plain').send(`Method ${req.method} not allowed\n`);
  };
  app.all(routes.telemetryPath, allow(['GET']), async (_req, res, next) => {
    try {
      res.type(METRICS_CONTENT_TYPE).send(await routes.metrics());
    } catch (e) {
      next(e);
    }
  });
  app.all('/', allow(['GET']), (_req, res) => void res.type('html').send(routes.landing()));
  app.all('/-/healthy', allow(['GET']), (_req, res) => void res.type('text/plain').send('Healthy\n'));
  app.all('/-/ready', allow(['GET']), (_req, res) => {
    if (routes.ready()) res.type('text/plain').send('Ready\n');
    else res.status(503).type('text/plain').send('Not ready\n');
  });
  app.all('/-/reload', allow(['POST', 'PUT']), (_req, res) => {
    const r = routes.reload();
    if (r.ok) res.type('text/plain').send('Reloaded\n');
    else res.status(500).type('text/plain').send(`failed to reload config: ${r.error}\n`);
  });
  app.use((_req: Request, res: Response) => void res.status(404).type('text/plain').send('Not found\n'));
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    res.status(500).type('text/plain').send(`internal error: ${err instanceof Error ? err.message : String(err)}\n`);
  });
  return app;
}

/** ":9100", "127.0.0.1:9100", "[::1]:9100" -> host and port. */
export function parseListenAddress(addr: string): { host: string | undefined; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(addr);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new Error(`--web.listen-address "${addr}" is not [host]:port`);
  const host = m[1] ?? m[2];
  return { host: host ? host : undefined, port };
}

export function listen(app: express.Express, addr: string): Promise<Server> {
  const { host, port } = parseListenAddress(addr);
  const server = createServer({ maxHeaderSize: 16 * 1024, requestTimeout: 10_000, headersTimeout: 5_000 }, app);
  server.keepAliveTimeout = 5_000;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}
