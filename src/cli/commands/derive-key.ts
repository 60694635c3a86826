import { type DeriveKeyInput, deriveKey } from '../../contract/derive-key.js';
import { required } from '../args.js';
import { EXIT, usageError } from '../cli-error.js';
import type { Args, CommandHelp, CommandOptions } from '../command.js';
import { type Io, print } from '../io.js';

export const name = 'derive-key';

export const options = {
  'run-id': { type: 'string' },
  'tool-call-id': { type: 'string' },
  tool: { type: 'string' },
  step: { type: 'string' },
  'step-index': { type: 'string' },
  instruction: { type: 'string' },
} as const satisfies CommandOptions;

export const help: CommandHelp = {
  rows: [
    {
      usage:
        'derive-key --run-id R [--tool-call-id C] [--tool N] [--step S | --step-index I] [--instruction JSON|-]',
      text: [
        'Print the key deriveKey() gives for these inputs',
        '(--instruction - reads the JSON from stdin)',
      ],
    },
  ],
  examples: ['tool-ledger derive-key --run-id conv_81 --tool-call-id call_1 --tool create_invoice'],
};

/** `derive-key`'s flags as `deriveKey`'s input; `--instruction -` reads the JSON from stdin, out of ps's sight. */
export async function parse(args: Args, io: Io): Promise<DeriveKeyOptions> {
  const str = args.str;
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
  const input: DeriveKeyInput = {
    runId: required('derive-key', 'run-id', str('run-id')),
    toolCallId: str('tool-call-id'),
    tool: str('tool'),
    step: step ?? index,
    ...(text === undefined ? {} : { instruction }),
  };
  return { input, json: args.json };
}

export interface DeriveKeyOptions {
  input: DeriveKeyInput;
  json: boolean;
}

export async function run(io: Io, opts: DeriveKeyOptions): Promise<number> {
  let key: string;
  try {
    key = deriveKey(opts.input);
  } catch (error) {
    throw usageError(error instanceof Error ? error.message : String(error));
  }
  print(io, opts.json, { key }, () => key);
  return EXIT.OK;
}
