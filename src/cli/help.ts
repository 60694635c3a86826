import { EXIT } from './cli-error.js';
import type { CliCommand, HelpRow } from './command.js';
import { COMMANDS } from './command-list.js';
import type { Io } from './io.js';

// `tool-ledger help`, generated from the command table: each command's rows and examples, in the table's order,
// around the parts every command shares (global options, exit codes).

/** The column where a row's text starts; a usage line too long to leave two spaces before it stands alone. */
const TEXT_COLUMN = 46;

const HEADER = `tool-ledger: support CLI for the tool-ledger idempotency ledger

Usage: tool-ledger <command> [options]`;

/** Rows of the built-in words, after the table's commands. */
const BUILT_IN_ROWS: readonly HelpRow[] = [
  { usage: 'help', text: ['Show this text'] },
  { usage: '--version', text: ['Print the installed version'] },
];

const SHARED = `Options
  --database-url URL   Postgres connection string without a password (default: $DATABASE_URL); a
                       password goes in $PGPASSWORD or $DATABASE_URL, never on the command line (ps shows it)
  --schema NAME        Schema holding the ledger (default: tool_ledger)
  --json               Machine-readable output on stdout
  --jaeger-url URL     Jaeger base for trace links and --trace (default: http://localhost:16686)
  --logs-url URL       inspect --trace: VictoriaLogs base (default: http://localhost:9428)
  --tenant T           inspect, forget, list, stats, audit: filter; approve, decline: the call's tenant
                       (default: default)
  --tool N             inspect, forget, list: filter; approve, decline: the call's tool
  --key K              inspect, forget, resolve, approve, decline: the idempotency key
  --yes                forget, resolve, rotate-key-secret: do it (without it, a dry run)
  --by WHO             forget, resolve (with --yes), approve, decline: the person the audit records
  --limit N            list: at most N rows (default 100)
  --batch-size N       purge: rows per DELETE (default 1000)
  -h, --help           Show this text

Exit codes
  0 ok   1 failed (database, missing secret)   2 bad command line   3 inspect found no run
  4 approve/decline refused (not awaiting a decision, expired, or decided by someone else first)
  5 audit --verify found a broken chain

Keys not typed by you (list, inspect --job, forget) are shown as telemetry shows them: raw when safe, else
hmac:<hash>, under the same secret as hash-key.`;

function renderRow(row: HelpRow): string[] {
  const usage = `  ${row.usage}`;
  const pad = ' '.repeat(TEXT_COLUMN);
  const [first = '', ...more] = row.text;
  const lines =
    usage.length + 2 <= TEXT_COLUMN ? [`${usage.padEnd(TEXT_COLUMN)}${first}`] : [usage, `${pad}${first}`];
  return [...lines, ...more.map((line) => `${pad}${line}`)];
}

/** The whole help text of `tool-ledger`, from the given commands (the table, unless a test passes its own). */
export function topHelp(commands: readonly CliCommand<unknown>[] = COMMANDS): string {
  const rows = [...commands.flatMap((c) => c.help.rows), ...BUILT_IN_ROWS];
  const examples = commands.flatMap((c) => c.help.examples);
  return [
    HEADER,
    '',
    'Commands',
    ...rows.flatMap(renderRow),
    '',
    SHARED,
    '',
    'Examples',
    ...examples.map((line) => `  ${line}`),
  ].join('\n');
}

/** `tool-ledger help`: the top help, whatever else is on the line. */
export const helpCommand: CliCommand<undefined> = {
  name: 'help',
  options: {},
  help: { rows: [], examples: [] },
  parse: () => undefined,
  run: async (io: Io) => {
    io.out(topHelp());
    return EXIT.OK;
  },
};
