import { type CliCommand, command } from './command.js';
import * as approve from './commands/approve.js';
import * as audit from './commands/audit.js';
import * as consoleCommand from './commands/console.js';
import * as decline from './commands/decline.js';
import * as deriveKey from './commands/derive-key.js';
import * as forget from './commands/forget.js';
import * as gateway from './commands/gateway.js';
import * as hashKey from './commands/hash-key.js';
import * as inspect from './commands/inspect.js';
import * as list from './commands/list.js';
import * as maintain from './commands/maintain.js';
import * as migrate from './commands/migrate.js';
import * as purge from './commands/purge.js';
import * as resolve from './commands/resolve.js';
import * as rotateKeySecret from './commands/rotate-key-secret.js';
import * as stats from './commands/stats.js';

/**
 * The commands of `tool-ledger`, in the order `tool-ledger help` lists them. A new command is a file in commands/
 * exporting the members of `CliCommand`, and one line here.
 */
export const COMMANDS: readonly CliCommand<unknown>[] = [
  command(migrate),
  command(maintain),
  command(inspect),
  command(list),
  command(purge),
  command(hashKey),
  command(rotateKeySecret),
  command(deriveKey),
  command(forget),
  command(resolve),
  command(approve),
  command(decline),
  command(audit),
  command(stats),
  command(gateway),
  command(consoleCommand),
];
