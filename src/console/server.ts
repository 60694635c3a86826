import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ToolLedgerError } from '../contract/errors.js';
import type { SupportDb } from '../support/db.js';
import { SupportRefusal } from '../support/refusal.js';
import type { ConsoleApprovals } from './approvals.js';
import { CONSOLE_CSS, WATERFALL_JS } from './assets.js';
import { ConsoleDecisions, decisionNews } from './decisions.js';
import { ExplorerReads } from './explorer-reads.js';
import { html } from './html.js';
import {
  BadForm,
  type Form,
  REFUSAL_STATUS,
  Refused,
  readForm,
  redirect,
  sameOrigin,
  securityHeaders,
  send,
} from './http.js';
import { Authenticator, COOKIE, type Identity } from './identity.js';
import { notice, type PageContext, page } from './layout.js';
import type { ResolvedConsoleOptions } from './options.js';
import { approvalsPage } from './pages/approvals.js';
import { unknownInbox } from './pages/inbox.js';
import { overviewPage } from './pages/overview.js';
import { runPage } from './pages/run.js';
import { defaultSearchForm, type SearchForm, searchFormMarkup, searchResultsMarkup } from './pages/search.js';
import { signinPage } from './pages/signin.js';
import { ConsoleReads, INBOX_LIMIT, type PageReads } from './reads.js';

/** A listening console. */
export interface ListeningConsole {
  readonly url: URL;
  close(): Promise<void>;
}

const SEARCH_FIELDS = ['key', 'tenant', 'tool', 'status', 'user', 'from', 'to'] as const;

/** A `datetime-local` value read as UTC. */
function utc(value: string, name: string): Date {
  const date = new Date(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(value) ? `${value}Z` : 'invalid');
  if (Number.isNaN(date.getTime()))
    throw new Refused(400, `${name} must be a date and time, as YYYY-MM-DDTHH:MM.`);
  return date;
}

/** The console's pages and decisions, one method per route; `handle` answers a request. */
export class ConsoleApp {
  readonly #options: ResolvedConsoleOptions;
  readonly #auth: Authenticator;
  readonly #reads: PageReads;
  readonly #approvals: ConsoleApprovals;
  readonly #decisions: ConsoleDecisions;
  /** Writes need the flag and someone to record: an authenticated identity, or the named local operator. */
  readonly writable: boolean;

  /** `explorer`: the schema of the explorer's view, when the role reads only that (postgres/explorer.sql). */
  constructor(
    options: ResolvedConsoleOptions,
    db: SupportDb,
    approvals: ConsoleApprovals,
    explorer: string | undefined,
  ) {
    this.#approvals = approvals;
    this.#options = options;
    this.#auth = new Authenticator(options);
    this.#reads =
      explorer === undefined ? new ConsoleReads(db, options) : new ExplorerReads(db, options, explorer);
    this.writable = options.allowWrites && (options.auth !== undefined || options.operator !== undefined);
    this.#decisions = new ConsoleDecisions(options, db, this.#reads, approvals, this.writable);
  }

  #context(identity: Identity): PageContext {
    return {
      identity,
      writable: this.writable,
      csrf: this.#auth.csrfToken(identity),
      schema: this.#options.schema,
    };
  }

  #respond(
    res: ServerResponse,
    status: number,
    title: string,
    ctx: PageContext | undefined,
    body: ReturnType<typeof html>,
    current?: string,
    script?: string,
  ): void {
    send(
      res,
      status,
      page(
        title,
        ctx,
        ctx === undefined || this.#reads.limited === undefined
          ? body
          : html`<p class="notice">${this.#reads.limited}</p>${body}`,
        {
          ...(current === undefined ? {} : { current }),
          ...(script === undefined ? {} : { script }),
        },
      ),
    );
  }

  async #signin(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!this.#auth.required) return redirect(res, '/');
    if (req.method === 'GET') return this.#respond(res, 200, 'Sign in', undefined, signinPage(undefined));
    if (!sameOrigin(req)) throw new Refused(403, 'This form was sent from another site.');
    const form = await readForm(req);
    const token = form.get('token') ?? '';
    const who = token === '' ? undefined : await this.#auth.check(token, true);
    if (who === undefined || 'status' in who) {
      this.#options.log(
        `tool-ledger console: sign-in refused (${who === undefined ? 'no token' : who.reason})`,
      );
      return this.#respond(res, 401, 'Sign in', undefined, signinPage(who?.message ?? 'Paste your token.'));
    }
    const secure = req.headers['x-forwarded-proto'] === 'https' ? '; Secure' : '';
    res.setHeader(
      'set-cookie',
      `${COOKIE}=${encodeURIComponent(token)}; HttpOnly; SameSite=Strict; Path=/${secure}`,
    );
    return redirect(res, '/');
  }

  async #search(req: IncomingMessage, res: ServerResponse, ctx: PageContext, form: Form | undefined) {
    if (form === undefined) {
      return this.#respond(res, 200, 'Search', ctx, searchFormMarkup(defaultSearchForm(), ctx), '/search');
    }
    const fields = Object.fromEntries(
      SEARCH_FIELDS.map((k) => [k, k === 'key' ? (form.get(k) ?? '') : (form.get(k) ?? '').trim()]),
    ) as unknown as SearchForm;
    const filled: SearchForm = {
      ...defaultSearchForm(),
      ...Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== '')),
    };
    void req;
    const { result, forgotten } = await this.#reads.search(
      {
        key: filled.key,
        tenant: filled.tenant,
        tool: filled.tool,
        status: filled.status,
        user: filled.user,
        from: utc(filled.from, 'From'),
        to: utc(filled.to, 'To'),
      },
      form.get('cursor') || undefined,
    );
    return this.#respond(
      res,
      200,
      'Search',
      ctx,
      html`${searchFormMarkup(filled, ctx)}${searchResultsMarkup(filled, result, ctx, forgotten)}`,
      '/search',
    );
  }

  /** Answers one request; a refusal is thrown (`Refused`, `SupportRefusal`, `BadForm`) and said by the caller. */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://console.invalid');
    const path = url.pathname;
    if (req.method === 'GET' && path === '/static/console.css')
      return send(res, 200, CONSOLE_CSS, 'text/css; charset=utf-8');
    if (req.method === 'GET' && path === '/static/waterfall.js')
      return send(res, 200, WATERFALL_JS, 'text/javascript; charset=utf-8');
    if (path === '/favicon.ico') return send(res, 404, '', 'text/plain');
    if (path === '/signin') return this.#signin(req, res);
    const who = await this.#auth.identify(req);
    if ('status' in who) {
      this.#options.log(`tool-ledger console: ${req.method} ${path} refused (${who.reason})`);
      return this.#respond(
        res,
        who.status,
        who.status === 401 ? 'Sign in' : 'Not allowed',
        undefined,
        signinPage(who.message),
      );
    }
    const ctx = this.#context(who);
    let form: Form | undefined;
    if (req.method === 'POST') {
      if (!sameOrigin(req)) throw new Refused(403, 'This form was sent from another site.');
      form = await readForm(req);
      if (!this.#auth.csrfValid(who, form.get('csrf')))
        throw new Refused(403, 'This form has no valid CSRF token: reload the page and send it again.');
    } else if (req.method !== 'GET' && req.method !== 'HEAD') {
      throw new Refused(405, `${req.method} is not allowed here.`);
    }
    const news = decisionNews(url.searchParams);
    const run = /^\/runs\/(\d{1,19})$/.exec(path);
    const resolveMatch = /^\/runs\/(\d{1,19})\/resolve$/.exec(path);
    if (path === '/signout' && form !== undefined) {
      res.setHeader('set-cookie', `${COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0`);
      return redirect(res, '/signin');
    }
    if (path === '/' && form === undefined) {
      const hours = [1, 6, 24, 72, 168].includes(Number(url.searchParams.get('hours')))
        ? Number(url.searchParams.get('hours'))
        : 24;
      return this.#respond(
        res,
        200,
        'Overview',
        ctx,
        overviewPage(await this.#reads.overview(hours), hours),
        '/',
      );
    }
    if (path === '/search') return this.#search(req, res, ctx, form);
    if (run !== null && form === undefined) {
      const found = await this.#reads.run(run[1] as string);
      if (found === undefined) throw new Refused(404, `No run ${run[1]} in schema ${this.#options.schema}.`);
      return this.#respond(
        res,
        200,
        `Run ${found.data.id}`,
        ctx,
        html`${news}${runPage(found.data, found.audit, found.timeline, ctx)}`,
        undefined,
        found.timeline.kind === 'story' ? '/static/waterfall.js' : undefined,
      );
    }
    const decideMatch = /^\/approvals\/(\d{1,19})\/decide$/.exec(path);
    if (form !== undefined) {
      if (decideMatch !== null)
        return redirect(res, await this.#decisions.decide(ctx, decideMatch[1] as string, form));
      if (resolveMatch !== null)
        return redirect(res, await this.#decisions.resolve(ctx, resolveMatch[1] as string, form));
      if (path === '/inbox/unknown/bulk') return redirect(res, await this.#decisions.bulkResolve(ctx, form));
      if (path === '/inbox/approvals/bulk') return redirect(res, await this.#decisions.bulkDecide(ctx, form));
    }
    if (path === '/inbox/unknown' && form === undefined)
      return this.#respond(
        res,
        200,
        'Unknown outcomes',
        ctx,
        html`${news}${unknownInbox(await this.#reads.unknownInbox(), ctx, INBOX_LIMIT)}`,
        '/inbox/unknown',
      );
    if (path === '/inbox/approvals' && form === undefined)
      return this.#respond(
        res,
        200,
        'Approvals',
        ctx,
        html`${news}${approvalsPage(await this.#approvals.inbox(await this.#reads.secret()), ctx)}`,
        '/inbox/approvals',
      );
    throw new Refused(404, 'No such page.');
  }
}

export async function listenConsole(
  options: ResolvedConsoleOptions,
  db: SupportDb,
  approvals: ConsoleApprovals,
  explorer: string | undefined,
): Promise<ListeningConsole> {
  const app = new ConsoleApp(options, db, approvals, explorer);
  const respond = (res: ServerResponse, status: number, message: string) =>
    send(
      res,
      status,
      page(
        status === 404 ? 'Not found' : 'Refused',
        undefined,
        html`${notice('alert', message)}<p><a href="/">Back to the overview</a></p>`,
      ),
    );
  const server: Server = createServer((req, res) => {
    securityHeaders(res);
    app.handle(req, res).catch((error: unknown) => {
      const status =
        error instanceof Refused
          ? error.status
          : error instanceof SupportRefusal
            ? REFUSAL_STATUS[error.kind]
            : error instanceof BadForm
              ? 400
              : 500;
      const message =
        error instanceof Refused || error instanceof SupportRefusal || error instanceof BadForm
          ? error.message
          : 'The console could not answer: see its log.';
      options.log(
        `tool-ledger console: ${req.method} ${new URL(req.url ?? '/', 'http://x').pathname} answered ${status}${status === 500 ? `: ${(error as Error).message}` : ''}`,
      );
      if (res.headersSent) return res.end();
      respond(res, status, message);
    });
  });
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', (error) =>
      reject(
        new ToolLedgerError(
          'CONFIG_INVALID',
          `The console cannot listen on ${options.host}:${options.port} (${error.message}). Pick a free port with --port.`,
          { cause: error },
        ),
      ),
    );
    server.listen(options.port, options.host, resolveListen);
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: new URL(`http://${host}:${address.port}/`),
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections?.();
        server.close(() => done());
      }),
  };
}
