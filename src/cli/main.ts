#!/usr/bin/env node
import { readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { readArgs } from './args.js';
import { CliError, EXIT, usageError } from './cli-error.js';
import type { CliCommand } from './command.js';
import { COMMANDS } from './command-list.js';
import { escapeTerminalLines } from './format.js';
import { helpCommand, topHelp } from './help.js';
import type { Io } from './io.js';

// The entry point of `tool-ledger`: it finds the command in the table and hands it the rest of the command line.

const BY_NAME: ReadonlyMap<string, CliCommand<unknown>> = new Map(
  [...COMMANDS, helpCommand].map((command) => [command.name, command]),
);

/** The installed package's version, read from its own package.json (two levels up from dist/cli or src/cli). */
function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version?: unknown;
  };
  return `tool-ledger ${String(manifest.version)}`;
}

export async function run(argv: readonly string[], io: Io): Promise<number> {
  const [first, ...rest] = argv;
  if (first === '--version' || first === '-v') {
    io.out(packageVersion());
    return EXIT.OK;
  }
  if (first === undefined || first === '--help' || first === '-h') {
    io.out(topHelp());
    return first === undefined ? EXIT.USAGE : EXIT.OK;
  }
  const command = BY_NAME.get(first);
  if (command === undefined) throw usageError(`Unknown command ${JSON.stringify(first)}.`);
  const args = readArgs(command, rest);
  if (args.flag('help')) {
    // In the gateway's stdio mode stdout belongs to MCP, but --help never starts a gateway.
    io.out(command.help.page ?? topHelp());
    return EXIT.OK;
  }
  return command.run(io, await command.parse(args, io));
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
