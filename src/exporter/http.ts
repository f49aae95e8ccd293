/** HTTP: only the documented routes and methods, with size and time limits. */
import express, { type Request, type Response, type NextFunction } from 'express';
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { isIPv4, isIPv6 } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Logger } from '../log.js';
import { checkClientCertificate, guarded, secureContextOptions, verifyFlags, type WebConfigWatcher } from './web/index.js';

export { MAX_BODY_BYTES } from './web/index.js';

export interface Routes {
  readonly telemetryPath: string;
  /** The body in pieces, so text kept between scrapes is sent without copying it. */
  metrics(): Promise<readonly Buffer[]>;
  /** The same body gzipped (one member per piece), for scrapers that accept it (Prometheus does). */
  metricsGzip?(): Promise<readonly Buffer[]>;
  /** The status page; `query` is the request's query string (`units=bits`). */
  landing(query: URLSearchParams): string;
  /** Undefined when ready; otherwise why not (the 503 body says it). */
  ready(): string | undefined;
  reload(): Promise<{ ok: true } | { ok: false; error: string }>;
  /** `--web.enable-lifecycle`: whether POST /-/reload may reload (403 otherwise), as in Prometheus. */
  readonly lifecycle: boolean;
  /** Told about an error a route threw; the client only gets "internal error". */
  internalError?(err: unknown): void;
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
  app.all(routes.telemetryPath, allow(['GET']), async (req, res, next) => {
    try {
      res.vary('Accept-Encoding');
      if (routes.metricsGzip && req.acceptsEncodings('gzip', 'identity') === 'gzip') {
        const members = await routes.metricsGzip();
        res.type(METRICS_CONTENT_TYPE).set('Content-Encoding', 'gzip').set('Content-Length', String(members.reduce((n, c) => n + c.length, 0)));
        for (const m of members) res.write(m);
        res.end();
        return;
      }
      const chunks = await routes.metrics();
      res.type(METRICS_CONTENT_TYPE).set('Content-Length', String(chunks.reduce((n, c) => n + c.length, 0)));
      for (const c of chunks) res.write(c);
      res.end();
    } catch (e) {
      next(e);
    }
  });
  app.all('/', allow(['GET']), (req, res) => void res.type('html').send(routes.landing(new URL(req.url, 'http://x').searchParams)));
  app.all('/-/healthy', allow(['GET']), (_req, res) => void res.type('text/plain').send('Healthy\n'));
  app.all('/-/ready', allow(['GET']), (_req, res) => {
    const why = routes.ready();
    if (why === undefined) res.type('text/plain').send('Ready\n');
    else res.status(503).type('text/plain').send(`Not ready: ${why}\n`);
  });
  app.all('/-/reload', allow(['POST', 'PUT']), async (_req, res) => {
    if (!routes.lifecycle) return void res.status(403).type('text/plain').send('Lifecycle API is not enabled (start with --web.enable-lifecycle, or send SIGHUP).\n');
    const r = await routes.reload();
    if (r.ok) res.type('text/plain').send('Reloaded\n');
    else res.status(500).type('text/plain').send(`failed to reload config: ${r.error}\n`);
  });
  app.use((_req: Request, res: Response) => void res.status(404).type('text/plain').send('Not found\n'));
  // What went wrong is logged; the body says nothing about the exporter's insides.
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    routes.internalError?.(err);
    res.status(500).type('text/plain').send('internal error\n');
  });
  return app;
}

/** A --web.listen-address that is refused; `form`: not [host]:port at all (else a part of it is wrong). */
export class ListenAddressError extends Error {
  constructor(message: string, readonly form: boolean) {
    super(message);
  }
}

/** A DNS host name (RFC 1123): labels of letters, digits and hyphens, not starting or ending with one. */
const HOST_NAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*\.?$/i;

/**
 * ":9100", "127.0.0.1:9100", "[::1]:9100", "host.example.net:9100" -> host and port. Each part is
 * checked here, so that a bad address is a usage error before anything is probed: the port in
 * 0..65535, an IPv6 address in brackets, digits and dots an IPv4 address, anything else a host
 * name (whether it resolves is known only when it is listened on).
 */
export function parseListenAddress(addr: string): { host: string | undefined; port: number } {
  const m = /^(?:\[([^\]]*)\]|([^:[\]]*)):(\d+)$/.exec(addr);
  if (!m) throw new ListenAddressError(`--web.listen-address "${addr}" is not [host]:port`, true);
  const wrong = (why: string): Error => new ListenAddressError(`--web.listen-address "${addr}": ${why}`, false);
  const port = Number(m[3]);
  if (port > 65535) throw wrong(`port ${m[3]} is out of range 0..65535`);
  const [, v6, name] = m;
  if (v6 !== undefined) {
    if (!isIPv6(v6)) throw wrong(`"${v6}" is not an IPv6 address`);
    return { host: v6, port };
  }
  if (!name) return { host: undefined, port };
  if (/^[\d.]+$/.test(name) && !isIPv4(name)) throw wrong(`"${name}" is not an IPv4 address`);
  if (!isIPv4(name) && !HOST_NAME.test(name)) throw wrong(`"${name}" is not a host name (letters, digits and hyphens, dot-separated)`);
  return { host: name, port };
}

/**
 * How long an idle kept-alive connection stays open. Longer than a one-minute scrape interval, so
 * Prometheus keeps one connection to the target across scrapes (as node_exporter's Go server,
 * which has no idle timeout, lets it). Node starts this clock when the last byte of a response
 * is handed to the kernel, not when the client has read it: at 5 s, a scraper still reading a
 * large body (or one whose process was busy that long) sent its next request on a connection
 * the server had closed ("socket hang up", seen in test/soak at 50 scrapers).
 */
const KEEP_ALIVE_IDLE_MS = 120_000;

const SERVER_LIMITS = { maxHeaderSize: 16 * 1024, requestTimeout: 10_000, headersTimeout: 5_000, connectionsCheckingInterval: 1_000 } as const;

export interface ListenOptions {
  /** TLS, basic auth, headers and rate limit from `--web.config.file`; plain HTTP without. */
  readonly web?: WebConfigWatcher;
  readonly log?: Logger;
}

export function listen(app: express.Express, addr: string, opts: ListenOptions = {}): Promise<Server> {
  const { host, port } = parseListenAddress(addr);
  const web = opts.web;
  const handler = guarded(app, web);
  const t = web?.current.tls;
  let server: Server;
  if (t) {
    const tlsServer = createHttpsServer({ ...SERVER_LIMITS, ...secureContextOptions(t), ...verifyFlags(t), handshakeTimeout: 10_000 }, handler);
    // Re-read the web config before each handshake, as the toolkit's GetConfigForClient does.
    tlsServer.prependListener('connection', () => void web.refresh());
    web.onChange((c) => {
      if (!c.tls) return;
      tlsServer.setSecureContext(secureContextOptions(c.tls));
      Object.assign(tlsServer, verifyFlags(c.tls));
    });
    tlsServer.on('secureConnection', (socket: TLSSocket) => {
      const refused = checkClientCertificate(web.current.tls, socket);
      if (refused === undefined) return;
      opts.log?.debug({ remote: socket.remoteAddress, reason: refused }, 'TLS client refused');
      socket.destroy();
    });
    tlsServer.on('tlsClientError', (err, socket) => {
      opts.log?.debug({ remote: socket.remoteAddress, err: err.message }, 'TLS handshake failed');
    });
    server = tlsServer;
  } else {
    server = createServer(SERVER_LIMITS, handler);
  }
  server.keepAliveTimeout = KEEP_ALIVE_IDLE_MS;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}
