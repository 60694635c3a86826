import { readFileSync } from 'node:fs';
import { type GatewaySettingsOptions, resolveGatewaySettings } from '../../config/gateway.js';
import type { LedgerOptions } from '../../config/options.js';
import { ToolLedgerError } from '../../contract/errors.js';
import type { StartGatewayOptions, TokenVerification } from '../../gateway/index.js';
import { CliError, EXIT } from '../cli-error.js';
import type { Args, ArgvRules, CommandHelp, CommandOptions } from '../command.js';
import { hasPassword } from '../db.js';
import type { Io } from '../io.js';

// `tool-ledger gateway`, built on the public `startGateway` of tool-ledger/gateway. The gateway's modules (and the
// MCP SDK under them) load only when this command runs, not for every command of the CLI.
const gatewayEntry = () => import('../../gateway/index.js');

export const name = 'gateway';

const PAGE = `tool-ledger gateway: put replay safety and telemetry in front of any MCP server

The gateway sits between an MCP client (an agent host such as Claude Desktop or VS Code) and an MCP server you
do not change. Tools the server marks read-only (readOnlyHint: true) pass through. Every other tool gets a
required "idempotency_key" argument: a retry with the same key gets the original result from the Postgres
ledger instead of running the tool twice. Resources, prompts and notifications pass through untouched.

Usage
  tool-ledger gateway [options] -- <server command> [args...]     stdio: spawns the server
  tool-ledger gateway [options] --upstream URL --listen HOST:PORT  Streamable HTTP on both sides
  tool-ledger gateway [options] --listen HOST:PORT -- <command>    HTTP clients, spawned stdio server

Ledger
  --database-url URL     Postgres without a password (default: $DATABASE_URL; a password goes in
                         $PGPASSWORD or $DATABASE_URL, never on the command line: ps shows it)
  --pglite DIR           An embedded ledger in directory DIR instead of Postgres (one process only)
  --schema NAME          Schema holding the ledger (default: tool_ledger)
  --config FILE          JSON per-tool settings (kind, volatileFields, ttlSeconds, leaseSeconds,
                         waitSeconds, onUnknown, timeoutSeconds), access rules and per-tenant
                         limits; see docs/gateway.md

Who is calling (keys are scoped by tenant; a key reused by another user is refused)
  --tenant T             Tenant of every call (default: "default")
  --user U               User of every call
  --tenant-header NAME   HTTP: the tenant comes from this header, set by a proxy you trust
  --user-header NAME     HTTP: the user comes from this header
  --token-secret-env VAR HTTP: verify "Authorization: Bearer <JWT>" (HS256) with the secret in $VAR
  --token-public-key F   HTTP: verify the bearer JWT (RS256/ES256) with the PEM public key in file F
  --token-jwks-url URL   HTTP: verify the bearer JWT (RS256/ES256) with the issuer's JWKS (cached, by kid)
  --token-issuer ISS     HTTP: require this "iss" claim     --token-audience AUD  require this "aud"
  --tenant-claim NAME    HTTP: the tenant comes from this token claim
  --user-claim NAME      HTTP: the user comes from this token claim (default: sub)

Upstream and clients
  --upstream URL         The MCP server's Streamable HTTP endpoint (instead of a command after --)
  --upstream-header H    "Name: value" sent to the upstream (repeatable), e.g. its own Authorization
  --listen HOST:PORT     Serve Streamable HTTP at http://HOST:PORT/mcp (default: stdio)
  --session-idle-timeout MS
                         HTTP: close a client session (and its upstream connection or spawned
                         server) after MS milliseconds without a request or a call in flight;
                         0 never (default: 120000, 2 minutes)
  --upstream-timeout MS  Wait for the upstream's answer to a call (default: 60000; a tool's
                         timeoutSeconds in --config wins); past it the outcome is unknown
  --upstream-connect-timeout MS
                         Wait for the upstream to start and answer at start-up (default: 30000)
  --upstream-ping-interval MS
                         Ping an HTTP upstream this often while calls wait (default: 15000; 0 off)
  --drain-timeout MS     On SIGTERM: stop accepting, answer the calls in flight within MS, then exit
                         (default: 15000)
  --max-request-bytes N  HTTP: answer 413 to a larger request body (default: 4194304)
  --key-field NAME       Name of the key argument (default: idempotency_key)
  -h, --help             Show this text

Telemetry: OpenTelemetry over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT (or another OTEL_* exporter
variable) is set, with the standard OTEL_* variables; spans continue the client's _meta.traceparent.
In stdio mode stdout is the MCP channel: diagnostics go to stderr.

Examples
  DATABASE_URL=postgres://app@db:5432/app tool-ledger gateway -- npx -y @modelcontextprotocol/server-filesystem /srv/files
  tool-ledger gateway --pglite ~/.tool-ledger/gateway --tenant me -- node my-server.js
  tool-ledger gateway --upstream http://127.0.0.1:3001/mcp --listen 127.0.0.1:8808 --tenant-header x-tenant-id
`;

export const options = {
  'database-url': { type: 'string' },
  pglite: { type: 'string' },
  schema: { type: 'string' },
  config: { type: 'string' },
  tenant: { type: 'string' },
  user: { type: 'string' },
  'tenant-header': { type: 'string' },
  'user-header': { type: 'string' },
  'token-secret-env': { type: 'string' },
  'token-public-key': { type: 'string' },
  'token-jwks-url': { type: 'string' },
  'token-issuer': { type: 'string' },
  'token-audience': { type: 'string' },
  'tenant-claim': { type: 'string' },
  'user-claim': { type: 'string' },
  upstream: { type: 'string' },
  'upstream-header': { type: 'string', multiple: true },
  listen: { type: 'string' },
  'session-idle-timeout': { type: 'string' },
  'upstream-timeout': { type: 'string' },
  'upstream-connect-timeout': { type: 'string' },
  'upstream-ping-interval': { type: 'string' },
  'drain-timeout': { type: 'string' },
  'max-request-bytes': { type: 'string' },
  'key-field': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies CommandOptions;

// Its own options only (no --json: in stdio mode stdout is the MCP channel); the server command follows `--`.
export const argv: ArgvRules = { globalOptions: false, tail: true };

export const help: CommandHelp = {
  rows: [
    {
      usage: 'gateway [options] -- <server command>',
      text: [
        'Run an MCP gateway: replay safety and telemetry in front of',
        'any MCP server (tool-ledger gateway --help)',
      ],
    },
  ],
  examples: [],
  page: PAGE.trimEnd(),
};

export type GatewayCommandOptions = StartGatewayOptions;

const HTTP_ONLY = [
  'tenant-header',
  'user-header',
  'token-secret-env',
  'token-public-key',
  'token-jwks-url',
  'tenant-claim',
  'user-claim',
  'session-idle-timeout',
  'max-request-bytes',
] as const;

/** Command-line flags of the gateway's settings (src/config/gateway.ts), each a whole number. */
const SETTING_FLAGS = {
  'session-idle-timeout': 'sessionIdleTimeoutMs',
  'upstream-timeout': 'upstreamCallTimeoutMs',
  'upstream-connect-timeout': 'upstreamConnectTimeoutMs',
  'upstream-ping-interval': 'upstreamPingIntervalMs',
  'drain-timeout': 'drainTimeoutMs',
  'max-request-bytes': 'maxRequestBytes',
} as const satisfies Record<string, keyof GatewaySettingsOptions>;

/** A usage error of this command: it points to its own help page. */
function gatewayUsage(message: string): CliError {
  return new CliError(`${message}\nRun \`tool-ledger gateway --help\` for usage.`, EXIT.USAGE);
}

function settingsOf(args: Args): GatewaySettingsOptions {
  const settings: Record<string, number> = {};
  for (const [flag, field] of Object.entries(SETTING_FLAGS)) {
    const value = args.str(flag);
    if (value === undefined) continue;
    if (!/^\d{1,10}$/.test(value)) {
      const unit = flag === 'max-request-bytes' ? 'bytes' : 'milliseconds';
      throw gatewayUsage(`--${flag} takes a whole number of ${unit}; got ${JSON.stringify(value)}.`);
    }
    settings[field] = Number(value);
  }
  try {
    resolveGatewaySettings(settings);
  } catch (error) {
    const flag = Object.entries(SETTING_FLAGS).find(([, f]) => (error as Error).message.startsWith(f))?.[0];
    throw gatewayUsage(`${flag ? `--${flag}: ` : ''}${(error as Error).message}`);
  }
  return settings;
}

/** The command line as `startGateway` options; every mistake in it is a usage error before anything starts. */
export async function parse(args: Args, io: Io): Promise<GatewayCommandOptions> {
  const str = args.str;
  const command = args.tail;
  const url = str('upstream');
  if ((url === undefined) === (command.length === 0)) {
    throw gatewayUsage(
      'gateway needs the MCP server to stand in front of: a command after -- (tool-ledger gateway -- npx -y @modelcontextprotocol/server-filesystem /srv), or --upstream URL.',
    );
  }
  const listen = str('listen') === undefined ? undefined : parseListen(str('listen') as string);
  if (url !== undefined && listen === undefined) {
    throw gatewayUsage(
      '--upstream URL needs --listen HOST:PORT: an HTTP upstream is served to HTTP clients.',
    );
  }
  if (listen === undefined) {
    const given = HTTP_ONLY.filter((name) => str(name) !== undefined);
    if (given.length > 0)
      throw gatewayUsage(
        `--${given[0]} applies to --listen (HTTP) only; over stdio use --tenant and --user.`,
      );
  }
  const ledger = ledgerOf(args, io);
  const token = tokenOf(args, io);
  for (const field of ['tenant', 'user'] as const) {
    const value = str(field);
    if (value !== undefined && value.trim() === '') {
      throw gatewayUsage(
        `--${field} is empty. Give a name (--${field} acme), or leave --${field} out for ${field === 'tenant' ? 'the tenant "default"' : 'no user'}.`,
      );
    }
  }
  const settings = settingsOf(args);
  const file =
    str('config') === undefined ? {} : (await gatewayEntry()).readGatewayConfig(str('config') as string);
  const [program, ...programArgs] = command;
  return {
    upstream:
      url !== undefined
        ? { url, headers: parseHeaders(args.strings('upstream-header')) }
        : { command: program as string, args: programArgs },
    ledger,
    ...(str('tenant') === undefined ? {} : { tenant: str('tenant') }),
    ...(str('user') === undefined ? {} : { user: str('user') }),
    ...(file.tools === undefined ? {} : { tools: file.tools }),
    ...(file.defaults === undefined ? {} : { defaults: file.defaults }),
    ...(file.access === undefined ? {} : { access: file.access }),
    ...(file.limits === undefined ? {} : { limits: file.limits }),
    ...((str('key-field') ?? file.keyField) === undefined
      ? {}
      : { keyField: str('key-field') ?? file.keyField }),
    ...(listen === undefined ? {} : { listen }),
    ...settings,
    identity: {
      ...(str('tenant-header') === undefined ? {} : { tenantHeader: str('tenant-header') }),
      ...(str('user-header') === undefined ? {} : { userHeader: str('user-header') }),
      ...(token === undefined ? {} : { token }),
      ...(str('tenant-claim') === undefined ? {} : { tenantClaim: str('tenant-claim') }),
      ...(str('user-claim') === undefined ? {} : { userClaim: str('user-claim') }),
    },
    log: io.err,
  };
}

/** The durable ledger: --database-url (never with a password), $DATABASE_URL, or --pglite DIR. */
function ledgerOf(args: Args, io: Io): LedgerOptions {
  const databaseUrl = args.str('database-url');
  if (databaseUrl !== undefined && hasPassword(databaseUrl)) {
    throw gatewayUsage(
      '--database-url carries a password, which every user of this machine can read in ps. Put it in PGPASSWORD (or the whole URL in DATABASE_URL) and pass --database-url without it.',
    );
  }
  const connectionString = databaseUrl ?? io.env.DATABASE_URL;
  const pglite = args.str('pglite');
  if (pglite !== undefined && databaseUrl !== undefined)
    throw gatewayUsage('Pass --database-url or --pglite, not both.');
  if (pglite === undefined && !connectionString) {
    throw gatewayUsage(
      'gateway needs a durable ledger: set DATABASE_URL, pass --database-url postgres://user@host:5432/db, or --pglite DIR for an embedded one.',
    );
  }
  return {
    ...(pglite === undefined ? { connectionString } : { pglite }),
    ...(args.str('schema') === undefined ? {} : { schema: args.str('schema') }),
  };
}

/** How HTTP clients' bearer tokens are verified: a shared secret from the environment, a public key file or a JWKS. */
function tokenOf(args: Args, io: Io): TokenVerification | undefined {
  const str = args.str;
  let token: TokenVerification | undefined;
  const secretEnv = str('token-secret-env');
  const keyFile = str('token-public-key');
  const jwksUrl = str('token-jwks-url');
  if ([secretEnv, keyFile, jwksUrl].filter((v) => v !== undefined).length > 1)
    throw gatewayUsage('Pass one of --token-secret-env, --token-public-key and --token-jwks-url.');
  if (secretEnv !== undefined) {
    const secret = io.env[secretEnv];
    if (!secret) throw gatewayUsage(`--token-secret-env ${secretEnv}: $${secretEnv} is not set.`);
    token = { secret };
  } else if (keyFile !== undefined) {
    token = { publicKey: readFileSync(keyFile, 'utf8') };
  } else if (jwksUrl !== undefined) {
    token = { jwksUrl };
  }
  if (token !== undefined) {
    return {
      ...token,
      ...(str('token-issuer') === undefined ? {} : { issuer: str('token-issuer') }),
      ...(str('token-audience') === undefined ? {} : { audience: str('token-audience') }),
    };
  }
  if (str('tenant-claim') !== undefined || str('user-claim') !== undefined) {
    throw gatewayUsage(
      '--tenant-claim and --user-claim need a verified token: add --token-secret-env, --token-public-key or --token-jwks-url.',
    );
  }
  return undefined;
}

/** A start-up failure in the gateway's words: the library's messages speak of createLedger, users ran a command. */
function startMessage(error: ToolLedgerError): string {
  if (error.code !== 'LEDGER_UNAVAILABLE') return `tool-ledger gateway: ${error.message}`;
  const cause = error.cause instanceof Error ? error.cause.message : error.message;
  return `tool-ledger gateway could not open its ledger database (${cause}). Check --database-url or DATABASE_URL (or --pglite DIR), that the database is reachable, and the credentials; then start the gateway again.`;
}

/** Runs the gateway until the client or the upstream goes away, or a signal stops it. */
export async function run(io: Io, options: GatewayCommandOptions): Promise<number> {
  const telemetry = await startTelemetryFromEnv(io);
  try {
    const { startGateway } = await gatewayEntry();
    const gateway = await startGateway(options).catch((error: unknown) => {
      if (error instanceof ToolLedgerError)
        throw new CliError(startMessage(error), EXIT.FAILURE, { cause: error });
      throw error;
    });
    if (gateway.url) io.err(`tool-ledger gateway: serving MCP (Streamable HTTP) at ${gateway.url.href}`);
    const stop = () => {
      if (gateway.url) io.err('tool-ledger gateway: stopping: draining the calls in flight.');
      void gateway.close();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    await gateway.closed;
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    return EXIT.OK;
  } finally {
    await telemetry?.shutdown().catch(() => {});
  }
}

function parseListen(value: string): { host: string; port: number } {
  const match = value.match(/^(\[[^\]]+\]|[^:]+):(\d{1,5})$/);
  const port = match ? Number(match[2]) : Number.NaN;
  if (!match || port > 65535)
    throw gatewayUsage(
      `--listen must be HOST:PORT (for example 127.0.0.1:8808), got ${JSON.stringify(value)}.`,
    );
  return { host: (match[1] as string).replace(/^\[|\]$/g, ''), port };
}

function parseHeaders(values: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const value of values) {
    const at = value.indexOf(':');
    if (at < 1) throw gatewayUsage(`--upstream-header must be "Name: value", got ${JSON.stringify(value)}.`);
    headers[value.slice(0, at).trim()] = value.slice(at + 1).trim();
  }
  return headers;
}

/** The OpenTelemetry SDK, when the OTEL_* variables ask for an exporter (its packages are optional peers). */
async function startTelemetryFromEnv(io: Io): Promise<{ shutdown(): Promise<void> } | undefined> {
  const wanted = Object.keys(io.env).some(
    (name) =>
      /^OTEL_EXPORTER_OTLP_(TRACES_|METRICS_|LOGS_)?ENDPOINT$/.test(name) ||
      /^OTEL_(TRACES|METRICS|LOGS)_EXPORTER$/.test(name),
  );
  if (!wanted) return undefined;
  try {
    const { startTelemetry } = await import('../../otel/index.js');
    return await startTelemetry({ serviceName: 'tool-ledger-gateway', mode: 'otlp' });
  } catch (error) {
    io.err(
      `tool-ledger gateway: telemetry not started (${(error as Error).message}); install @opentelemetry/sdk-node and the OTLP exporters to export it.`,
    );
    return undefined;
  }
}
