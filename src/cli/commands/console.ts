import { readFileSync } from 'node:fs';
import type { ConsoleAuth, ConsoleOptions } from '../../console/index.js';
import { ToolLedgerError } from '../../contract/errors.js';
import { connectionOf, DEFAULT_JAEGER_URL, DEFAULT_LOGS_URL } from '../args.js';
import { CliError, EXIT, usageError } from '../cli-error.js';
import type { Args, CommandHelp, CommandOptions } from '../command.js';
import type { Io } from '../io.js';

const consoleEntry = () => import('../../console/index.js');

export const name = 'console';

export const options = {
  host: { type: 'string' },
  port: { type: 'string' },
  'allow-writes': { type: 'boolean', default: false },
  operator: { type: 'string' },
  'tokens-file': { type: 'string' },
  'tokens-env': { type: 'string' },
  'jwks-url': { type: 'string' },
  'token-secret-env': { type: 'string' },
  'token-public-key': { type: 'string' },
  'token-issuer': { type: 'string' },
  'token-audience': { type: 'string' },
  'role-claim': { type: 'string' },
  'actor-claim': { type: 'string' },
  'jaeger-url': { type: 'string' },
  'logs-url': { type: 'string' },
  trace: { type: 'boolean', default: false },
} as const satisfies CommandOptions;

const PAGE = `tool-ledger console: a web page to find any key, see what happened, and decide

  tool-ledger console [--host H] [--port P] [--allow-writes] [auth] [--jaeger-url URL --logs-url URL | --trace]

Serves search, run pages (steps, audit, trace timeline), the inboxes of unknown outcomes and approvals, and an
overview, from the ledger database (--database-url or $DATABASE_URL, --schema). It prints the URL it listens on
(127.0.0.1:4320 by default). Read-only unless --allow-writes; every write records the signed-in identity and a
reason.

Auth (without it, the console listens on loopback only):
  --tokens-file F        static tokens, one a line: ROLE ACTOR TOKEN (ROLE viewer or operator)
  --tokens-env VAR       the same lines in $VAR
  --jwks-url URL         JWTs verified against the issuer's JWKS (RS256/ES256), as the gateway verifies
  --token-secret-env VAR JWTs signed with HS256 by the secret in $VAR    --token-public-key F  by a PEM key
  --token-issuer ISS     require this "iss"      --token-audience AUD  require this "aud"
  --role-claim NAME      the claim holding viewer or operator (default: roles)
  --actor-claim NAME     the claim naming the person (default: sub)
  --operator NAME        without auth: the one local operator, recorded on each write (needs --allow-writes)

Trace timeline: --jaeger-url URL (Jaeger's query API) and --logs-url URL (VictoriaLogs); --trace takes
http://localhost:16686 and http://localhost:9428.
`;

export const help: CommandHelp = {
  rows: [
    {
      usage: 'console [--port P] [--allow-writes] [--tokens-file F | --jwks-url URL]',
      text: [
        'Serve the ledger console: search, run pages, the inboxes',
        'of unknown outcomes and approvals, an overview (see',
        'tool-ledger console --help)',
      ],
    },
  ],
  examples: ['tool-ledger console --allow-writes --tokens-file /etc/tool-ledger/console-tokens --trace'],
  page: PAGE,
};

/** Static tokens or JWT verification, from the command line; undefined without auth. */
async function authOf(args: Args, io: Io): Promise<ConsoleAuth | undefined> {
  const str = args.str;
  const { parseTokens } = await consoleEntry();
  const sources = ['tokens-file', 'tokens-env', 'jwks-url', 'token-secret-env', 'token-public-key'].filter(
    (n) => str(n) !== undefined,
  );
  if (sources.length > 1) throw usageError(`Pass one way to sign in, not --${sources.join(' and --')}.`);
  const wrap = <T>(fn: () => T): T => {
    try {
      return fn();
    } catch (error) {
      if (error instanceof ToolLedgerError) throw usageError(error.message);
      throw error;
    }
  };
  if (str('tokens-file') !== undefined) {
    const file = str('tokens-file') as string;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw usageError(`--tokens-file ${file} cannot be read: ${(error as Error).message}.`);
    }
    return { tokens: wrap(() => parseTokens(text, `--tokens-file ${file}`)) };
  }
  if (str('tokens-env') !== undefined) {
    const variable = str('tokens-env') as string;
    const text = io.env[variable];
    if (!text) throw usageError(`--tokens-env ${variable}: $${variable} is not set.`);
    return { tokens: wrap(() => parseTokens(text, `$${variable}`)) };
  }
  const claims = {
    ...(str('role-claim') === undefined ? {} : { roleClaim: str('role-claim') }),
    ...(str('actor-claim') === undefined ? {} : { actorClaim: str('actor-claim') }),
    ...(str('token-issuer') === undefined ? {} : { issuer: str('token-issuer') }),
    ...(str('token-audience') === undefined ? {} : { audience: str('token-audience') }),
  };
  if (str('jwks-url') !== undefined) return { jwt: { jwksUrl: str('jwks-url') as string, ...claims } };
  if (str('token-secret-env') !== undefined) {
    const variable = str('token-secret-env') as string;
    const secret = io.env[variable];
    if (!secret) throw usageError(`--token-secret-env ${variable}: $${variable} is not set.`);
    return { jwt: { secret, ...claims } };
  }
  if (str('token-public-key') !== undefined)
    return { jwt: { publicKey: readFileSync(str('token-public-key') as string, 'utf8'), ...claims } };
  if (Object.keys(claims).length > 0)
    throw usageError(
      '--role-claim, --actor-claim, --token-issuer and --token-audience need --jwks-url (or a JWT key).',
    );
  return undefined;
}

export async function parse(args: Args, io: Io): Promise<ConsoleOptions> {
  const str = args.str;
  const connection = connectionOf(args, io);
  const port = str('port') === undefined ? 4320 : Number(str('port'));
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw usageError(`--port must be a TCP port (0 for any free one), got ${JSON.stringify(str('port'))}.`);
  if (str('operator') !== undefined && !args.flag('allow-writes'))
    throw usageError('--operator names who decides: it needs --allow-writes.');
  const auth = await authOf(args, io);
  const trace = args.flag('trace');
  const jaegerUrl = str('jaeger-url') ?? (trace ? DEFAULT_JAEGER_URL : undefined);
  const logsUrl = str('logs-url') ?? (trace ? DEFAULT_LOGS_URL : undefined);
  return {
    connectionString: connection.databaseUrl,
    schema: connection.schema,
    port,
    allowWrites: args.flag('allow-writes'),
    env: io.env,
    log: io.err,
    ...(str('host') === undefined ? {} : { host: str('host') }),
    ...(auth === undefined ? {} : { auth }),
    ...(str('operator') === undefined ? {} : { operator: str('operator') }),
    ...(jaegerUrl === undefined ? {} : { jaegerUrl }),
    ...(logsUrl === undefined ? {} : { logsUrl }),
  };
}

/** Serves the console until a signal stops it. */
export async function run(io: Io, options: ConsoleOptions): Promise<number> {
  const { startConsole } = await consoleEntry();
  const running = await startConsole(options).catch((error: unknown) => {
    if (error instanceof ToolLedgerError) throw new CliError(error.message, EXIT.FAILURE, { cause: error });
    throw error;
  });
  io.err(
    `tool-ledger console: serving ${running.url.href} (${running.writable ? 'decisions allowed' : 'read-only'}${options.auth === undefined ? ', no sign-in: loopback only' : ''})`,
  );
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await running.close();
  return EXIT.OK;
}
