import type { ParseArgsConfig } from 'node:util';
import type { Io } from './io.js';

// What a command of the support CLI is. Each file of commands/ exports the members of `CliCommand` (name, options,
// help, parse, run, and argv when it reads the command line its own way); command-list.ts lists them in the order
// `tool-ledger help` shows them, and main.ts dispatches from that list.

/** The options of one command, in the shape `node:util` `parseArgs` takes. */
export type CommandOptions = NonNullable<ParseArgsConfig['options']>;

/** One row of the Commands section of `tool-ledger help`: a usage line and what it does, line by line. */
export interface HelpRow {
  readonly usage: string;
  readonly text: readonly string[];
}

/** What `tool-ledger help` says of a command. */
export interface CommandHelp {
  /** Its rows of the Commands section (a command used in several ways has one row for each). */
  readonly rows: readonly HelpRow[];
  /** Its lines of the Examples section, as typed. */
  readonly examples: readonly string[];
  /** A page of its own, which `tool-ledger <command> --help` prints instead of the top help. */
  readonly page?: string;
}

/** How a command's command line is read. */
export interface ArgvRules {
  /** Whether the global options (--database-url, --schema, --json, --help) are read beside its own. @default true */
  readonly globalOptions?: boolean;
  /** Whether it takes positional arguments (each command checks them itself). @default false */
  readonly positionals?: boolean;
  /** Whether the words after `--` are its tail (a program to run) instead of positionals. @default false */
  readonly tail?: boolean;
}

/** The command line as a command's `parse` reads it. */
export interface Args {
  /** `--json`: machine-readable output. */
  readonly json: boolean;
  /** A string option's value; undefined when it was not given. */
  str(name: string): string | undefined;
  /** A boolean option: true only when given. */
  flag(name: string): boolean;
  /** A string option given any number of times (`multiple: true`). */
  strings(name: string): readonly string[];
  readonly positionals: readonly string[];
  /** What followed `--`, for a command whose `argv.tail` is set. */
  readonly tail: readonly string[];
}

/**
 * One command: `parse` turns the command line into the command's own options (throwing `usageError` for a wrong
 * one, before anything is done) and `run` does the work, answering the exit code.
 */
export interface CliCommand<O> {
  readonly name: string;
  readonly options: CommandOptions;
  readonly help: CommandHelp;
  readonly argv?: ArgvRules;
  parse(args: Args, io: Io): O | Promise<O>;
  run(io: Io, options: O): Promise<number>;
}

/** A command for the table: the compiler checks that what `parse` gives is what `run` takes. */
export function command<O>(definition: CliCommand<O>): CliCommand<unknown> {
  return definition as CliCommand<unknown>;
}
