#!/usr/bin/env node
import { readFileSync, realpathSync } from 'node:fs';
import { userInfo } from 'node:os';
import { fileURLToPath } from 'node:url';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import type { DeriveKeyInput } from '../contract/derive-key.js';
import { CliError, EXIT, usageError } from './cli-error.js';
import {
  deriveKeyCommand,
  forgetCommand,
  hashKeyCommand,
  type Io,
  inspectCommand,
  listCommand,
  maintainCommand,
  migrateCommand,
  purgeCommand,
  RAW_KEY_ENV,
  rotateKeySecretCommand,
  STATUSES,
  statsCommand,
} from './commands.js';
import { resolveConnection } from './db.js';
import { escapeTerminalLines } from './format.js';
import { resolutionOf, resolveCommand } from './resolve.js';

const HELP = `tool-ledger: support CLI for the tool-ledger idempotency ledger

Usage: tool-ledger <command> [options]

Commands
  migrate [--print-sql] [--layout table|partitioned] [--partition-width-seconds N]
                                              Apply pending migrations (or print the SQL for a DBA);
                                              --layout partitioned converts tool_runs to partitions
                                              by expiry (default width 86400 s)
  maintain [--ahead-seconds N] [--grace-seconds N]
                                              Partitioned layout: make the partitions for the next N s
                                              (default 172800) and drop those ended N s ago (default 0)
                                              that hold no live lease
  inspect --key K [--tenant T] [--tool N]     Show every run with key K (in any tenant and tool unless
                                              narrowed): status, attempts, timestamps, parameter hash,
                                              scrubbed result or error, trace id and Jaeger link
  inspect --key K --trace [--jaeger-url URL] [--logs-url URL]
                                              Also every call made with the key: time, outcome,
                                              attempt, waited ms, trace id and the original it
                                              followed, from Jaeger's API and VictoriaLogs
  inspect --job ID [--tenant T] [--tool N]    Show the run of a background job
  list [--status S] [--stale]                 List runs by status (default in_progress); --stale keeps only
                                              in_progress runs whose lease has lapsed (stuck)
  purge --expired [--dry-run]                 Delete rows past their TTL in batches, progress on stderr
  hash-key                                    Print the telemetry HMAC of a raw key read from stdin or
                                              $TOOL_LEDGER_RAW_KEY (never argv: ps shows it), under
                                              $TOOL_LEDGER_KEY_HASH_SECRET if set, else under the
                                              deployment's secret stored in the ledger schema
  rotate-key-secret [--yes]                   Replace the deployment's stored key-hash secret (dry run
                                              without --yes); restart every process afterwards
  derive-key --run-id R [--tool-call-id C] [--tool N] [--step S | --step-index I] [--instruction JSON|-]
                                              Print the key deriveKey() gives for these inputs
                                              (--instruction - reads the JSON from stdin)
  forget --key K [--tenant T] [--tool N] [--yes] [--by WHO] [--reason TEXT]
                                              List the runs with key K that would be deleted (dry run);
                                              --yes deletes them and records who, when and why
                                              (key as HMAC) in tool_runs_forgotten
  resolve --key K [--tenant T] [--tool N] (--result JSON | --failed MESSAGE | --rerun) [--by WHO] [--reason TEXT]
                                              Settle a run in status unknown (an interrupted effect,
                                              listed by list --status unknown) once you have checked
                                              the provider: --result JSON it happened (replayed from
                                              now on), --failed MESSAGE a final failure, --rerun the
                                              next call runs it again; recorded in tool_runs_resolved
  stats [--tenant T]                          Count runs by tool and status, with stale and expired rows
  gateway [options] -- <server command>       Run an MCP gateway: replay safety and telemetry in front of
                                              any MCP server (tool-ledger gateway --help)
  help                                        Show this text
  --version                                   Print the installed version

Options
  --database-url URL   Postgres connection string without a password (default: $DATABASE_URL); a
                       password goes in $PGPASSWORD or $DATABASE_URL, never on the command line (ps shows it)
  --schema NAME        Schema holding the ledger (default: tool_ledger)
  --json               Machine-readable output on stdout
  --jaeger-url URL     Jaeger base for trace links and --trace (default: http://localhost:16686)
  --logs-url URL       inspect --trace: VictoriaLogs base (default: http://localhost:9428)
  --tenant T           inspect, forget, list, stats: filter
  --tool N             inspect, forget, list: filter
  --key K              inspect, forget: the idempotency key
  --yes                forget, rotate-key-secret: do it (without it, a dry run)
  --limit N            list: at most N rows (default 100)
  --batch-size N       purge: rows per DELETE (default 1000)
  -h, --help           Show this text

Exit codes
  0 ok   1 failed (database, missing secret)   2 bad command line   3 inspect found no run

Keys not typed by you (list, inspect --job, forget) are shown as telemetry shows them: raw when safe, else
hmac:<hash>, under the same secret as hash-key.

Examples
  DATABASE_URL=postgres://app@db:5432/app tool-ledger migrate
  tool-ledger migrate --print-sql --schema billing_ledger > ledger.sql
  tool-ledger inspect --tenant acme --tool create_invoice --key order-1042
  tool-ledger inspect --key order-1042
  tool-ledger inspect --tenant acme --tool create_invoice --key order-1042 --trace
  tool-ledger inspect --job job_7f3a
  tool-ledger list --status in_progress --stale --json | jq '.runs[].key'
  tool-ledger list --status failed --tool charge_card --limit 20
  tool-ledger list --status unknown                                   # interrupted effects to settle
  tool-ledger resolve --key order-991 --tool charge_card --result '{"chargeId":"ch_1"}' --reason 'seen in Stripe'
  tool-ledger purge --expired --dry-run
  tool-ledger purge --expired --batch-size 5000
  printf %s 'maria@example.com' | tool-ledger hash-key --schema billing_ledger
  tool-ledger rotate-key-secret --yes
  tool-ledger derive-key --run-id conv_81 --tool-call-id call_1 --tool create_invoice
  tool-ledger forget --key maria@example.com --reason 'erasure request 88'          # dry run
  tool-ledger forget --key maria@example.com --yes --by ana --reason 'erasure request 88'
  tool-ledger stats --tenant acme
`;

const GLOBAL_OPTIONS = {
  'database-url': { type: 'string' },
  schema: { type: 'string' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const satisfies ParseArgsConfig['options'];

const COMMAND_OPTIONS = {
  migrate: {
    'print-sql': { type: 'boolean', default: false },
    layout: { type: 'string' },
    'partition-width-seconds': { type: 'string' },
  },
  maintain: {
    'ahead-seconds': { type: 'string' },
    'grace-seconds': { type: 'string' },
  },
  inspect: {
    tenant: { type: 'string' },
    tool: { type: 'string' },
    key: { type: 'string' },
    job: { type: 'string' },
    'jaeger-url': { type: 'string' },
    trace: { type: 'boolean', default: false },
    'logs-url': { type: 'string' },
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
  'rotate-key-secret': { yes: { type: 'boolean', default: false } },
  'derive-key': {
    'run-id': { type: 'string' },
    'tool-call-id': { type: 'string' },
    tool: { type: 'string' },
    step: { type: 'string' },
    'step-index': { type: 'string' },
    instruction: { type: 'string' },
  },
  forget: {
    tenant: { type: 'string' },
    tool: { type: 'string' },
    key: { type: 'string' },
    yes: { type: 'boolean', default: false },
    by: { type: 'string' },
    reason: { type: 'string' },
  },
  resolve: {
    tenant: { type: 'string' },
    tool: { type: 'string' },
    key: { type: 'string' },
    result: { type: 'string' },
    failed: { type: 'string' },
    rerun: { type: 'boolean', default: false },
    by: { type: 'string' },
    reason: { type: 'string' },
  },
  stats: { tenant: { type: 'string' } },
  help: {},
} as const satisfies Record<string, ParseArgsConfig['options']>;

type Command = keyof typeof COMMAND_OPTIONS;

const DEFAULT_JAEGER_URL = 'http://localhost:16686';
const DEFAULT_LOGS_URL = 'http://localhost:9428';

function positiveInt(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw usageError(`${name} must be a positive integer, got ${JSON.stringify(value)}.`);
  return n;
}

function nonNegativeInt(name: string, value: string | undefined, fallback: number): number {
  return value === '0' ? 0 : positiveInt(name, value, fallback);
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
  if (first === 'gateway') return (await import('../gateway/cli.js')).gatewayCommand(rest, io);
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
      const layout = str('layout');
      if (layout !== undefined && layout !== 'table' && layout !== 'partitioned') {
        throw usageError(`--layout must be table or partitioned, got ${JSON.stringify(layout)}.`);
      }
      if (str('partition-width-seconds') !== undefined && layout !== 'partitioned') {
        throw usageError('--partition-width-seconds goes with --layout partitioned.');
      }
      return migrateCommand(io, {
        printSql: flag('print-sql'),
        json,
        schema,
        connection,
        layout:
          layout === undefined
            ? undefined
            : {
                layout,
                widthSeconds: positiveInt(
                  '--partition-width-seconds',
                  str('partition-width-seconds'),
                  86_400,
                ),
              },
      });
    }
    case 'maintain':
      return maintainCommand(io, {
        aheadSeconds: positiveInt('--ahead-seconds', str('ahead-seconds'), 172_800),
        graceSeconds: nonNegativeInt('--grace-seconds', str('grace-seconds'), 0),
        json,
        connection: connection(),
      });
    case 'inspect': {
      const key = str('key');
      const job = str('job');
      if ((key === undefined) === (job === undefined)) {
        throw usageError(
          'inspect needs --key K or --job ID (one of them), optionally with --tenant and --tool.',
        );
      }
      const scope = {
        ...(str('tenant') === undefined ? {} : { tenant: required('inspect', 'tenant', str('tenant')) }),
        ...(str('tool') === undefined ? {} : { tool: required('inspect', 'tool', str('tool')) }),
      };
      return inspectCommand(io, {
        lookup:
          key !== undefined
            ? { by: 'key', key: required('inspect', 'key', key), ...scope }
            : { by: 'job', jobId: required('inspect', 'job', job), ...scope },
        json,
        jaegerUrl,
        connection: connection(),
        ...(flag('trace') ? { trace: { logsUrl: str('logs-url') ?? DEFAULT_LOGS_URL } } : {}),
      });
    }
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
      const positional = parsed.positionals.filter((p) => p !== '-');
      if (positional.length > 0) {
        // Not echoed: the key may be an email, and this message may end up in a ticket.
        throw usageError(
          `hash-key does not take the key as an argument: every user of this machine can read argv in ps. Pipe it on standard input (printf %s "$KEY" | tool-ledger hash-key) or set ${RAW_KEY_ENV}.`,
        );
      }
      return hashKeyCommand(io, { json, schema: str('schema') ?? 'tool_ledger', connection });
    }
    case 'derive-key':
      return deriveKeyCommand(io, { input: await deriveKeyInput(str, io), json });
    case 'forget':
      return forgetCommand(io, {
        key: required('forget', 'key', str('key')),
        tenant: str('tenant'),
        tool: str('tool'),
        yes: flag('yes'),
        by: str('by') ?? osUser(io.env),
        reason: str('reason'),
        json,
        connection: connection(),
      });
    case 'resolve':
      return resolveCommand(io, {
        key: required('resolve', 'key', str('key')),
        tenant: str('tenant'),
        tool: str('tool'),
        resolution: resolutionOf({ result: str('result'), failed: str('failed'), rerun: flag('rerun') }),
        by: str('by') ?? osUser(io.env),
        reason: str('reason'),
        json,
        connection: connection(),
      });
    case 'rotate-key-secret':
      return rotateKeySecretCommand(io, { yes: flag('yes'), json, connection: connection() });
    case 'stats':
      return statsCommand(io, { tenant: str('tenant'), json, connection: connection() });
  }
}

/** `derive-key`'s flags as `deriveKey`'s input; `--instruction -` reads the JSON from stdin, out of ps's sight. */
async function deriveKeyInput(str: (name: string) => string | undefined, io: Io): Promise<DeriveKeyInput> {
  const step = str('step');
  const stepIndex = str('step-index');
  if (step !== undefined && stepIndex !== undefined) {
    throw usageError('derive-key takes --step (a name) or --step-index (a number), not both.');
  }
  let instruction: unknown;
  const text = str('instruction');
  if (text !== undefined) {
    const source = text === '-' ? await io.readStdin() : text;
    try {
      instruction = JSON.parse(source);
    } catch (error) {
      throw usageError(
        `--instruction must be JSON (the same value the runner passes to deriveKey): ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }
  const index = stepIndex === undefined ? undefined : Number(stepIndex);
  if (index !== undefined && (stepIndex?.trim() === '' || !Number.isFinite(index))) {
    throw usageError(`--step-index must be a number, got ${JSON.stringify(stepIndex)}.`);
  }
  return {
    runId: required('derive-key', 'run-id', str('run-id')),
    toolCallId: str('tool-call-id'),
    tool: str('tool'),
    step: step ?? index,
    ...(text === undefined ? {} : { instruction }),
  };
}

/** Who ran `forget`, when --by is not given: the operating-system user. */
function osUser(env: NodeJS.ProcessEnv): string {
  try {
    return userInfo().username;
  } catch {
    return env.USER ?? env.LOGNAME ?? 'unknown';
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
      // Messages quote what was typed or stored (a tenant, a key, a database error); nothing in them may drive
      // the terminal.
      io.err(`tool-ledger: ${escapeTerminalLines(error.message)}`);
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
