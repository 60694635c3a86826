import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { canonicalJson } from './canonical-json.js';
import { ToolLedgerError } from './errors.js';
import { NotJsonError } from './json.js';
import { sha256Hex } from './sha256.js';

/** The stable identifiers of one intent, from which `deriveKey` builds an idempotency key. */
export interface DeriveKeyInput {
  /**
   * The run, conversation or workflow the intent belongs to. It must survive retries and resumes: a persisted
   * conversation id or workflow run id, not a process id or a per-attempt request id.
   */
  readonly runId: string;
  /**
   * The model's tool call id. Runners replay the same id when they resume a run, so it pins the key to one call.
   * Leave it out when the intent is identified by `step` instead (for example in a deterministic workflow).
   */
  readonly toolCallId?: string | undefined;
  /** The tool's name, so two tools called from one step never share a key. */
  readonly tool?: string | undefined;
  /** A position inside the run, such as a workflow step name or index, for runners without tool call ids. */
  readonly step?: string | number | undefined;
  /**
   * The instruction or arguments the intent carries (any JSON value). Only its hash enters the key, so a changed
   * instruction gives a new key while a retry of the same one keeps it. Leave it out when the model may
   * regenerate slightly different arguments on resume and the call id alone should decide.
   */
  readonly instruction?: unknown;
}

/** Bumped only if the derivation changes, so keys derived by an older version never collide with new ones. */
const PREFIX = 'tlk1_';

/**
 * Builds an idempotency key from stable intent identifiers: the same across retries and resumes of one intent,
 * different when any identifier or the instruction changes. The key is a fixed-length opaque string (it never
 * contains the identifiers themselves, so it is safe to log even when a run id holds personal data).
 *
 * Use it where the runner, not the model, owns the key: agent loops and workflow engines that persist a run id
 * and replay tool call ids. Compute it once and pass it through every retry.
 */
export function deriveKey(input: DeriveKeyInput): string {
  const fail = (why: string) =>
    new ToolLedgerError(
      'KEY_INVALID',
      `deriveKey: ${why}. Pass { runId } (a persisted run, conversation or workflow id) plus toolCallId or step.`,
    );
  if (input === null || typeof input !== 'object') throw fail('expected an object');
  const { runId, toolCallId, tool, step, instruction } = input;
  if (typeof runId !== 'string' || runId.length === 0) throw fail('runId must be a non-empty string');
  for (const [name, value] of [
    ['toolCallId', toolCallId],
    ['tool', tool],
  ] as const) {
    if (value !== undefined && (typeof value !== 'string' || value.length === 0)) {
      throw fail(`${name} must be a non-empty string when given`);
    }
  }
  if (
    step !== undefined &&
    typeof step !== 'string' &&
    !(typeof step === 'number' && Number.isFinite(step))
  ) {
    throw fail('step must be a string or a finite number when given');
  }
  let instructionHash: string | null = null;
  if (instruction !== undefined) {
    try {
      // The same canonical text as a tool's parameter hash (one walk, the same refusals).
      instructionHash = sha256Hex(canonicalJson(instruction));
    } catch (error) {
      if (error instanceof NotJsonError) throw fail(`instruction is not JSON (${error.message})`);
      throw error;
    }
  }
  // A canonical JSON array keeps the parts unambiguous: no separator inside an id can shift one part into another.
  const parts = [runId, toolCallId ?? null, tool ?? null, step ?? null, instructionHash];
  const digest = createHash('sha256')
    .update(canonicalize(parts) ?? '', 'utf8')
    .digest('base64url');
  return PREFIX + digest;
}
