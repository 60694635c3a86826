import { createHash, randomBytes } from 'node:crypto';
import { jsonText } from '../contract/canonical-json.js';
import { OutcomeUnknownError, ToolFailure, ToolLedgerError } from '../contract/errors.js';
import { NotJsonError } from '../contract/json.js';
import type { CallScope, StepScope } from '../contract/observer.js';
import type { StepContext, StepOptions, UnknownOutcomeRule } from '../contract/types.js';
import type { StepRecord } from '../ledger/run-row.js';
import type { LedgerStore, RunFence } from '../ledger/store.js';
import { toStoredError } from './failures.js';
import { retryWrite } from './retry-write.js';

const MAX_STEP_NAME_LENGTH = 200;

/**
 * Errors the step runner has already decided are a final unknown outcome (the step's rule is `'fail'`). The
 * executor ends such a call as `unknown` whatever the tool's own rule says, even when the handler rethrew it.
 */
export const DECIDED_UNKNOWN = new WeakSet<object>();

/**
 * Step results this process finished but could not save yet, by run, token and step name. A later attempt in
 * this process takes them instead of running the step again, and saves them under its own fence. Bounded: the
 * oldest go first (a lapsed one then counts as interrupted, which its rule settles).
 */
export class HeldSteps {
  readonly #results = new Map<string, string>();
  readonly #max: number;

  constructor(max = 10_000) {
    this.#max = max;
  }

  static key(runId: string, token: string, name: string): string {
    return `${runId}\u0000${token}\u0000${name}`;
  }

  hold(key: string, resultText: string): void {
    this.#results.delete(key);
    if (this.#results.size >= this.#max) this.#results.delete(this.#results.keys().next().value!);
    this.#results.set(key, resultText);
  }

  get(key: string): string | undefined {
    return this.#results.size === 0 ? undefined : this.#results.get(key);
  }

  release(key: string): void {
    this.#results.delete(key);
  }
}

/** Who the steps belong to, and where their records go. */
export interface StepRunnerSettings {
  readonly store: LedgerStore;
  readonly held: HeldSteps;
  readonly fence: RunFence;
  readonly tool: string;
  readonly tenant: string;
  readonly key: string;
  readonly records: Readonly<Record<string, StepRecord>> | null;
  readonly token: string | null;
  readonly scope: CallScope;
  readonly signal: () => AbortSignal;
  /**
   * Why step records cannot commit on their own here, if they cannot: a transactional tool on PGlite, whose one
   * connection the handler's transaction holds until it ends (a record would wait for it forever).
   */
  readonly unrecordable?: string | undefined;
}

/**
 * A provider key: SHA-256 over the run's scope, the step name and the run's step token, as `tl_` and 43
 * base64url characters. Stable across the attempts of one run; a later run of the same key (after its TTL) draws
 * a new token, so a provider never dedupes a new intent against an old one. Reveals nothing of the key.
 */
export function providerKey(tenant: string, tool: string, key: string, name: string, token: string): string {
  const digest = createHash('sha256')
    .update(`tool-ledger step\u0000${tenant}\u0000${tool}\u0000${key}\u0000${name}\u0000${token}`)
    .digest('base64url');
  return `tl_${digest}`;
}

/** How a step's lookup of an unknown outcome went: the result, or "it did not happen". */
type Looked = { readonly found: true; readonly text: string } | { readonly found: false };

/** The recorded steps of one execution (`ctx.step`). */
export class StepRunner {
  readonly #s: StepRunnerSettings;
  readonly #records: Map<string, StepRecord>;
  #token: string | null;
  /** Steps of this attempt by name: a name used twice in one attempt is the same step. */
  readonly #thisAttempt = new Map<string, Promise<unknown>>();

  constructor(settings: StepRunnerSettings) {
    this.#s = settings;
    this.#records = new Map(Object.entries(settings.records ?? {}));
    this.#token = settings.token;
  }

  readonly step = <T>(
    name: string,
    fn: (step: StepContext) => T | Promise<T>,
    options: StepOptions<T> = {},
  ): Promise<never> => {
    if (typeof name !== 'string' || name.length === 0 || name.length > MAX_STEP_NAME_LENGTH) {
      return Promise.reject(
        new ToolLedgerError(
          'CONFIG_INVALID',
          `Tool "${this.#s.tool}": ctx.step needs a name of 1-${MAX_STEP_NAME_LENGTH} characters that is the same on every attempt (for example "charge"), got ${typeof name === 'string' ? `${name.length} characters` : typeof name}.`,
        ),
      );
    }
    if (typeof fn !== 'function') {
      return Promise.reject(
        new ToolLedgerError(
          'CONFIG_INVALID',
          `Tool "${this.#s.tool}": ctx.step("${name}") needs a function.`,
        ),
      );
    }
    if (this.#s.unrecordable !== undefined) {
      return Promise.reject(new ToolLedgerError('CONFIG_INVALID', this.#s.unrecordable));
    }
    const rule = options?.onUnknown ?? 'fail';
    if (rule !== 'rerun' && rule !== 'fail' && typeof rule !== 'function') {
      return Promise.reject(
        new ToolLedgerError(
          'CONFIG_INVALID',
          `Tool "${this.#s.tool}": ctx.step("${name}") has onUnknown ${JSON.stringify(rule)}; use 'rerun', 'fail' or a lookup function.`,
        ),
      );
    }
    const running = this.#thisAttempt.get(name);
    if (running) return running as Promise<never>;
    const scope = this.#s.scope.startStep(name);
    const work = this.#run(name, fn, rule as UnknownOutcomeRule<StepContext, unknown>, scope);
    this.#thisAttempt.set(name, work);
    return work as Promise<never>;
  };

  #context(name: string): StepContext {
    const { tenant, tool, key, fence } = this.#s;
    const token = this.#token!;
    const signal = this.#s.signal;
    return {
      name,
      key: providerKey(tenant, tool, key, name, token),
      attempt: fence.attempt,
      get signal() {
        return signal();
      },
    };
  }

  async #run(
    name: string,
    fn: (step: StepContext) => unknown,
    rule: UnknownOutcomeRule<StepContext, unknown>,
    scope: StepScope,
  ): Promise<unknown> {
    try {
      const record = this.#records.get(name);
      if (record?.status === 'succeeded') {
        const value = JSON.parse(record.result ?? 'null');
        scope.end('replayed', undefined, value);
        return value;
      }
      // Started by an earlier attempt and never finished: the effect may or may not have happened.
      if (record?.status === 'started' && record.attempt < this.#s.fence.attempt) {
        const heldKey = this.#token ? HeldSteps.key(this.#s.fence.id, this.#token, name) : undefined;
        const heldText = heldKey ? this.#s.held.get(heldKey) : undefined;
        if (heldText !== undefined) {
          // This process finished it and could not save it then: save it now, never run it again.
          const value = await this.#saveResult(name, heldText);
          this.#s.held.release(heldKey!);
          scope.end('replayed', undefined, value);
          return value;
        }
        const settled = await this.#settleUnknown(name, rule, record.attempt, scope);
        if (settled.found) {
          const value = await this.#saveResult(name, settled.text);
          scope.end('looked_up', undefined, value);
          return value;
        }
      }
      return await this.#execute(name, fn, rule, scope);
    } catch (error) {
      scope.end(DECIDED_UNKNOWN.has(error as object) ? 'unknown' : 'failed', error);
      throw error;
    }
  }

  /** Applies the rule to an interrupted step: throws for `'fail'`, else says whether a lookup found it. */
  async #settleUnknown(
    name: string,
    rule: UnknownOutcomeRule<StepContext, unknown>,
    startedIn: number,
    scope: StepScope,
  ): Promise<Looked> {
    if (rule === 'rerun') return { found: false };
    if (rule === 'fail')
      throw this.#unknown(name, `started in attempt ${startedIn} and never recorded a result`);
    const found = await scope.run(() => rule(this.#context(name)));
    if (found === undefined) return { found: false };
    return { found: true, text: this.#jsonOf(name, found, 'its onUnknown lookup returned') };
  }

  async #execute(
    name: string,
    fn: (step: StepContext) => unknown,
    rule: UnknownOutcomeRule<StepContext, unknown>,
    scope: StepScope,
  ): Promise<unknown> {
    const { store, fence } = this.#s;
    const token = await store.startStep(fence, name, this.#token ?? randomBytes(18).toString('base64url'));
    if (token === undefined) throw this.#leaseLost(name);
    this.#token = token;
    let value: unknown;
    try {
      value = await scope.run(() => fn(this.#context(name)));
    } catch (error) {
      if (error instanceof OutcomeUnknownError) {
        // The record stays `started`: the next attempt applies the rule. Only `'fail'` decides now.
        if (rule === 'fail') throw this.#unknown(name, 'reported that its outcome is unknown', error);
        throw new ToolFailure(
          `Step "${name}" of tool "${this.#s.tool}" reported that its outcome is unknown (${error.message}). Retry with the same key: the next attempt ${rule === 'rerun' ? 'runs the step again' : 'looks the outcome up first'}.`,
          { final: false, cause: error },
        );
      }
      // The step's own failure: recorded, so the next attempt runs it again rather than calling it unknown.
      await store.finishStep(fence, name, 'failed', null, toStoredError(error, false)).catch(() => undefined);
      throw error;
    }
    // Its effect happened: a value that cannot be stored leaves the record started (unknown), never "failed".
    const text = this.#jsonOf(name, value, 'returned');
    const heldKey = HeldSteps.key(fence.id, token, name);
    this.#s.held.hold(heldKey, text);
    const result = await this.#saveResult(name, text);
    this.#s.held.release(heldKey);
    scope.end('executed', undefined, result);
    return result;
  }

  /** Saves a step's result under the fence, retrying briefly; the value the handler gets is its JSON form. */
  async #saveResult(name: string, text: string): Promise<unknown> {
    const { store, fence } = this.#s;
    let saved: boolean;
    try {
      saved = await retryWrite(() => store.finishStep(fence, name, 'succeeded', text, null));
    } catch (error) {
      throw new ToolLedgerError(
        'LEDGER_UNAVAILABLE',
        `Step "${name}" of tool "${this.#s.tool}" finished, but the database failed while saving its result (${error instanceof Error ? error.message : String(error)}). This process keeps the result: retry with the same key and it is saved, not run again.`,
        { cause: error, retryable: true },
      );
    }
    if (!saved) throw this.#leaseLost(name);
    this.#records.set(name, { status: 'succeeded', attempt: fence.attempt, result: text });
    return JSON.parse(text);
  }

  #jsonOf(name: string, value: unknown, what: string): string {
    try {
      return jsonText(value === undefined ? null : value, true);
    } catch (error) {
      if (!(error instanceof NotJsonError)) throw error;
      throw new ToolLedgerError(
        'RESULT_INVALID',
        `Step "${name}" of tool "${this.#s.tool}" ${what} a value that cannot be stored as JSON (${error.message}). Its effect may have happened, so the key is spent: return JSON-safe values from steps and use a new key.`,
        { cause: error, retryable: false },
      );
    }
  }

  #unknown(name: string, what: string, cause?: unknown): OutcomeUnknownError {
    const error = new OutcomeUnknownError(
      `Step "${name}" of tool "${this.#s.tool}" ${what}, so its effect may or may not have happened, and its onUnknown rule is 'fail'. The run is marked unknown and nothing is repeated. Check the effect at the provider (its idempotency key is ${this.#token ? this.#context(name).key : 'not drawn yet'}), then settle the run: tool-ledger resolve --tenant ${this.#s.tenant} --tool ${this.#s.tool} --key <key> (--result JSON | --failed MESSAGE | --rerun).`,
      { cause },
    );
    DECIDED_UNKNOWN.add(error);
    return error;
  }

  #leaseLost(name: string): ToolLedgerError {
    return new ToolLedgerError(
      'LEASE_LOST',
      `Step "${name}" of tool "${this.#s.tool}" could not be recorded: this execution's lease lapsed and another caller took over the key. Retry with the same key to get the current execution's result; raise leaseSeconds for long handlers.`,
    );
  }
}
