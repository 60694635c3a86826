import { parseArgs } from 'node:util';
import { usageError } from './cli-error.js';
import type { Args, CliCommand, CommandOptions } from './command.js';
import { type Connection, resolveConnection } from './db.js';
import type { Io } from './io.js';

// Reading the command line: the options every command takes, and the checks commands share.

/** Options every command takes beside its own (unless its `argv.globalOptions` is false). */
export const GLOBAL_OPTIONS = {
  'database-url': { type: 'string' },
  schema: { type: 'string' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const satisfies CommandOptions;

export const DEFAULT_JAEGER_URL = 'http://localhost:16686';
export const DEFAULT_LOGS_URL = 'http://localhost:9428';

/** The command line after the command's name, read strictly: an unknown option is a usage error. */
export function readArgs(command: CliCommand<unknown>, argv: readonly string[]): Args {
  const rules = command.argv ?? {};
  const split = rules.tail ? argv.indexOf('--') : -1;
  const own = split === -1 ? [...argv] : argv.slice(0, split);
  const tail = split === -1 ? [] : argv.slice(split + 1);
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({
      args: own,
      options: rules.globalOptions === false ? command.options : { ...GLOBAL_OPTIONS, ...command.options },
      allowPositionals: rules.positionals === true,
      strict: true,
    });
  } catch (error) {
    throw usageError(`${command.name}: ${error instanceof Error ? error.message : String(error)}`);
  }
  // parseArgs types its values loosely across the merged option sets; each command reads only its own.
  const v = parsed.values;
  const str = (name: string) => (typeof v[name] === 'string' ? (v[name] as string) : undefined);
  return {
    json: v.json === true,
    str,
    flag: (name) => v[name] === true,
    strings: (name) => (Array.isArray(v[name]) ? (v[name] as string[]) : []),
    positionals: parsed.positionals,
    tail,
  };
}

/** The database and schema of `--database-url` (or $DATABASE_URL) and `--schema`, checked. */
export function connectionOf(args: Args, io: Io): Connection {
  return resolveConnection({ 'database-url': args.str('database-url'), schema: args.str('schema') }, io.env);
}

export function positiveInt(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw usageError(`${name} must be a positive integer, got ${JSON.stringify(value)}.`);
  return n;
}

export function nonNegativeInt(name: string, value: string | undefined, fallback: number): number {
  return value === '0' ? 0 : positiveInt(name, value, fallback);
}

export function required(command: string, name: string, value: string | undefined): string {
  if (value === undefined || value === '') throw usageError(`${command} needs --${name}.`);
  return value;
}
