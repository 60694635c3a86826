#!/usr/bin/env node
import { readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import {
  hashKeyCommand,
  type Io,
  inspectCommand,
  listCommand,
  migrateCommand,
  purgeCommand,
  STATUSES,
  statsCommand,
} from './commands.js';
import { resolveConnection } from './db.js';
import { CliError, EXIT, usageError } from './errors.js';

const HELP = `tool-ledger: support CLI for the tool-ledger idempotency ledger

Usage: tool-ledger <command> [options]

Commands
  migrate [--print-sql]                       Apply pending migrations (or print the SQL for a DBA)
  inspect --tenant T --tool N --key K         Show one run: status, attempts, timestamps, parameter hash,
                                              scrubbed result or error, trace id and Jaeger link
  list [--status S] [--stale]                 List runs by status (default in_progress); --stale keeps only
                                              in_progress runs whose lease has lapsed (stuck)
  purge --expired [--dry-run]                 Delete rows past their TTL in batches, progress on stderr
  hash-key K                                  Print the telemetry HMAC of a raw key (K = - reads stdin);
                                              needs TOOL_LEDGER_KEY_HASH_SECRET
  stats [--tenant T]                          Count runs by tool and status, with stale and expired rows
  help                                        Show this text
  --version                                   Print the installed version

Options
  --database-url URL   Postgres connection string without a password (default: $DATABASE_URL); a
                       password goes in $PGPASSWORD or $DATABASE_URL, never on the command line (ps shows it)
  --schema NAME        Schema holding the ledger (default: tool_ledger)
  --json               Machine-readable output on stdout
  --jaeger-url URL     Jaeger UI base for trace links (default: http://localhost:16686)
  --tenant T           inspect: required; list, stats: filter
  --tool N             inspect: required; list: filter
  --key K              inspect: the idempotency key
  --limit N            list: at most N rows (default 100)
  --batch-size N       purge: rows per DELETE (default 1000)
  -h, --help           Show this text

Exit codes
  0 ok   1 failed (database, missing secret)   2 bad command line   3 inspect found no run

Examples
  DATABASE_URL=postgres://app@db:5432/app tool-ledger migrate
  tool-ledger migrate --print-sql --schema billing_ledger > ledger.sql
  tool-ledger inspect --tenant acme --tool create_invoice --key order-1042
  tool-ledger list --status in_progress --stale --json | jq '.runs[].key'
  tool-ledger list --status failed --tool charge_card --limit 20
  tool-ledger purge --expired --dry-run
  tool-ledger purge --expired --batch-size 5000
  echo -n 'maria@example.com' | TOOL_LEDGER_KEY_HASH_SECRET=... tool-ledger hash-key -
  tool-ledger stats --tenant acme
`;

const GLOBAL_OPTIONS = {
  'database-url': { type: 'string' },
  schema: { type: 'string' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const satisfies ParseArgsConfig['options'];

const COMMAND_OPTIONS = {
  migrate: { 'print-sql': { type: 'boolean', default: false } },
  inspect: {
    tenant: { type: 'string' },
    tool: { type: 'string' },
    key: { type: 'string' },
    'jaeger-url': { type: 'string' },
  },
  list: {
    status: { type: 'string' },
    stale: { type: 'boolean', default: false },
    tenant: { type: 'string' },
    tool: { type: 'string' },
    limit: { type: 'string' },
    'jaeger-url': { type: 'string' },
  },
  purge: {
    expired: { type: 'boolean', default: false },
    'dry-run': { type: 'boolean', default: false },
    'batch-size': { type: 'string' },
  },
  'hash-key': {},
  stats: { tenant: { type: 'string' } },
  help: {},
} as const satisfies Record<string, ParseArgsConfig['options']>;

type Command = keyof typeof COMMAND_OPTIONS;

const DEFAULT_JAEGER_URL = 'http://localhost:16686';

function positiveInt(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw usageError(`${name} must be a positive integer, got ${JSON.stringify(value)}.`);
  return n;
}

function required(command: string, name: string, value: string | undefined): string {
  if (value === undefined || value === '') throw usageError(`${command} needs --${name}.`);
  return value;
}

/** The installed package's version, read from its own package.json (two levels up from dist/cli or src/cli). */
function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version?: unknown;
  };
  return `tool-ledger ${String(manifest.version)}`;
}

function isCommand(name: string): name is Command {
  return Object.hasOwn(COMMAND_OPTIONS, name);
}

export async function run(argv: readonly string[], io: Io): Promise<number> {
  const [first, ...rest] = argv;
  if (first === '--version' || first === '-v') {
    io.out(packageVersion());
    return EXIT.OK;
  }
  if (first === undefined || first === '--help' || first === '-h') {
    io.out(HELP.trimEnd());
    return first === undefined ? EXIT.USAGE : EXIT.OK;
  }
  if (!isCommand(first)) throw usageError(`Unknown command ${JSON.stringify(first)}.`);
  const command = first;
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({
      args: [...rest],
      options: { ...GLOBAL_OPTIONS, ...COMMAND_OPTIONS[command] },
      allowPositionals: command === 'hash-key',
      strict: true,
    });
  } catch (error) {
    throw usageError(`${command}: ${error instanceof Error ? error.message : String(error)}`);
  }
  // parseArgs types its values loosely across the merged option sets; each command reads only its own.
  const v = parsed.values;
  const str = (name: string) => (typeof v[name] === 'string' ? (v[name] as string) : undefined);
  const flag = (name: string) => v[name] === true;
  const json = flag('json');
  if (command === 'help' || flag('help')) {
    io.out(HELP.trimEnd());
    return EXIT.OK;
  }
  const connection = () =>
    resolveConnection({ 'database-url': str('database-url'), schema: str('schema') }, io.env);
  const jaegerUrl = str('jaeger-url') ?? DEFAULT_JAEGER_URL;

  switch (command) {
    case 'migrate': {
      const schema = str('schema') ?? 'tool_ledger';
      if (flag('print-sql')) {
        // Validates the schema name without needing a database.
        resolveConnection({ 'database-url': 'postgres://unused', schema }, io.env);
      }
      return migrateCommand(io, { printSql: flag('print-sql'), json, schema, connection });
    }
    case 'inspect':
      return inspectCommand(io, {
        tenant: required('inspect', 'tenant', str('tenant')),
        tool: required('inspect', 'tool', str('tool')),
        key: required('inspect', 'key', str('key')),
        json,
        jaegerUrl,
        connection: connection(),
      });
    case 'list': {
      const status = str('status') ?? 'in_progress';
      if (!(STATUSES as readonly string[]).includes(status)) {
        throw usageError(`--status must be one of ${STATUSES.join(', ')}, got ${JSON.stringify(status)}.`);
      }
      if (flag('stale') && status !== 'in_progress') {
        throw usageError(
          '--stale applies to --status in_progress only (a lease only matters while a run is held).',
        );
      }
      return listCommand(io, {
        status,
        stale: flag('stale'),
        tenant: str('tenant'),
        tool: str('tool'),
        limit: positiveInt('--limit', str('limit'), 100),
        json,
        jaegerUrl,
        connection: connection(),
      });
    }
    case 'purge':
      if (!flag('expired')) {
        throw usageError('purge needs --expired: it only ever deletes rows past their TTL.');
      }
      return purgeCommand(io, {
        dryRun: flag('dry-run'),
        batchSize: positiveInt('--batch-size', str('batch-size'), 1000),
        json,
        connection: connection(),
      });
    case 'hash-key': {
      const [key, ...extra] = parsed.positionals;
      if (key === undefined) throw usageError('hash-key needs the raw key (or - to read it from stdin).');
      if (extra.length > 0)
        throw usageError('hash-key takes exactly one key; quote keys that contain spaces.');
      return hashKeyCommand(io, { key, json });
    }
    case 'stats':
      return statsCommand(io, { tenant: str('tenant'), json, connection: connection() });
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function main(argv: readonly string[]): Promise<number> {
  const io: Io = {
    out: (text) => process.stdout.write(`${text}\n`),
    err: (text) => process.stderr.write(`${text}\n`),
    env: process.env,
    readStdin,
  };
  try {
    return await run(argv, io);
  } catch (error) {
    if (error instanceof CliError) {
      io.err(`tool-ledger: ${error.message}`);
      return error.exitCode;
    }
    io.err(
      `tool-ledger: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
    return EXIT.FAILURE;
  }
}

// Run only as the entry point (npm's bin shim resolves to this file through a symlink), not when imported.
const invokedAs = process.argv[1];
if (invokedAs && realpathSync(invokedAs) === fileURLToPath(import.meta.url)) {
  process.exitCode = await main(process.argv.slice(2));
}
