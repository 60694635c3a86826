import { describe, expect, it } from 'vitest';
import { GLOBAL_OPTIONS } from '../../../src/cli/args.js';
import { type CliCommand, command } from '../../../src/cli/command.js';
import { COMMANDS } from '../../../src/cli/command-list.js';
import { topHelp } from '../../../src/cli/help.js';

/** The command table drives dispatch and `tool-ledger help`; these hold for every row of it. */
describe('the CLI command table', () => {
  it('names each command once', () => {
    const names = COMMANDS.map((c) => c.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names).not.toContain('help');
  });

  it.each(COMMANDS.map((c) => [c.name, c] as const))('%s: its usage rows start with its name', (name, c) => {
    expect(c.help.rows.length).toBeGreaterThan(0);
    for (const row of c.help.rows) expect(row.usage.split(' ')[0]).toBe(name);
  });

  it.each(COMMANDS.filter((c) => c.argv?.globalOptions !== false).map((c) => [c.name, c] as const))(
    '%s: its own options leave the global ones alone',
    (_name, c) => {
      // parseArgs would let a command's option silently replace the global one of the same name.
      for (const option of Object.keys(c.options)) expect(Object.keys(GLOBAL_OPTIONS)).not.toContain(option);
    },
  );

  it('lists every command in the help, in the order of the table', () => {
    const help = topHelp();
    const positions = COMMANDS.map((c) => help.indexOf(`\n  ${c.help.rows[0]?.usage}`));
    expect(positions.every((p) => p > 0)).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
  });

  it('puts a new command in the help from its row of the table alone', () => {
    const approve = command({
      name: 'approve',
      options: { key: { type: 'string' } },
      help: {
        rows: [{ usage: 'approve --key K', text: ['Approve the call waiting with key K', 'second line'] }],
        examples: ['tool-ledger approve --key order-7'],
      },
      parse: (args) => ({ key: args.str('key') }),
      run: async () => 0,
    });
    const help = topHelp([...COMMANDS, approve]);
    expect(help).toContain(
      `\n  approve --key K${' '.repeat(29)}Approve the call waiting with key K\n${' '.repeat(46)}second line\n`,
    );
    expect(help).toContain('\n  tool-ledger approve --key order-7');
    expect(help.indexOf('approve --key K')).toBeLessThan(help.indexOf('\n  help '));
  });

  it('refuses, at compile time, a command whose parse gives what its run does not take', () => {
    const definition = {
      name: 'broken',
      options: {},
      help: { rows: [], examples: [] },
      parse: () => 1,
      run: async (_io: unknown, options: string) => options.length,
    };
    // @ts-expect-error parse gives a number, run takes a string
    const checked: CliCommand<unknown> = command(definition);
    expect(checked.name).toBe('broken');
  });
});
