import { createHash, randomBytes } from 'node:crypto';
import { jsonText } from '../contract/canonical-json.js';
import { OutcomeUnknownError, ToolLedgerError } from '../contract/errors.js';
import { NotJsonError } from '../contract/json.js';
import type { CallScope, StepScope } from '../contract/observer.js';
import type { StepContext, StepOptions, UnknownOutcomeRule } from '../contract/types.js';
import type { RunFence } from '../ledger/fence.js';
import type { StepRecord } from '../ledger/run-row.js';
import type { LedgerStore } from '../ledger/store.js';
import { toStoredError } from './failures.js';
import { callStepContext } from './handler-context.js';
import {
  stepLeaseLost,
  stepNameInvalid,
  stepNeedsFunction,
  stepNotJson,
  stepNotSaved,
  stepReportedUnknown,
  stepRuleInvalid,
  stepUnknown,
} from './messages.js';
import { retryWrite } from './retry-write.js';

const MAX_STEP_NAME_LENGTH = 200;

/**
 * Errors the step runner has already decided are a final unknown outcome (the step's rule is `'fail'`). The
 * executor ends such a call as `unknown` whatever the tool's own rule says, even when the handler rethrew it.
 */
export const DECIDED_UNKNOWN = new WeakSet<object>();

/**
 * How a step that an attempt of this process ran ended, for a later attempt here that found it started: `held`,
 * its result is held (`HeldSteps.get`); `rerun`, it had no effect to keep (its function threw its own error, or
 * never ran), so it runs again, as a recorded failure would; `unknown`, its effect may have happened unrecorded.
 */
export type StepEnd = 'held' | 'rerun' | 'unknown';

/**
 * Step results this process finished but could not save yet, by run, token and step name. A later attempt in
 * this process takes them instead of running the step again, and saves them under its own fence. Bounded: the
 * oldest go first (a lapsed one then counts as interrupted, which its rule settles).
 *
 * Also the steps running here now, by run and name: when an attempt's lease lapses under a slow step (a dead
 * network stops its renewals) and a retry from this process takes the run over, the retry finds the step started
 * and would call it interrupted while this process is still running it. It waits for it instead, within the
 * tool's `waitSeconds`, and then knows how it ended.
 */
export class HeldSteps {
  readonly #results = new Map<string, string>();
  readonly #running = new Map<string, Promise<StepEnd>>();
  readonly #max: number;

  constructor(max = 10_000) {
    this.#max = max;
  }

  static key(runId: string, token: string, name: string): string {
    return `${runId}\u0000${token}\u0000${name}`;
  }

  /** A running step's key: the run and the step (its token may not be drawn yet when it starts). */
  static runningKey(runId: string, name: string): string {
    return `${runId}\u0000${name}`;
  }

  /** Registers a step starting here; the function returned says how it ended, once (later calls do nothing). */
  running(key: string): (end: StepEnd) => void {
    let settle!: (end: StepEnd) => void;
    const ended = new Promise<StepEnd>((resolve) => {
      settle = resolve;
    });
    this.#running.set(key, ended);
    return (end) => {
      settle(end);
      if (this.#running.get(key) === ended) this.#running.delete(key);
    };
  }

  /**
   * How the step running here under `key` ended, waiting for it at most `waitMs` and until `signal` aborts;
   * undefined when none runs here or the wait ran out.
   */
  async ended(key: string, waitMs: number, signal: AbortSignal): Promise<StepEnd | undefined> {
    const running = this.#running.get(key);
    if (!running || waitMs <= 0 || signal.aborted) return undefined;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const gaveUp = new Promise<undefined>((resolve) => {
      timer = setTimeout(resolve, waitMs, undefined);
      onAbort = () => resolve(undefined);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([running, gaveUp]);
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort!);
    }
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
  /** How long to wait for a step an earlier attempt of this process is still running (the tool's `waitSeconds`). */
  readonly waitMs: number;
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
      return Promise.reject(stepNameInvalid(this.#s.tool, name, MAX_STEP_NAME_LENGTH));
    }
    if (typeof fn !== 'function') {
      return Promise.reject(stepNeedsFunction(this.#s.tool, name));
    }
    if (this.#s.unrecordable !== undefined) {
      return Promise.reject(new ToolLedgerError('CONFIG_INVALID', this.#s.unrecordable));
    }
    const rule = options?.onUnknown ?? 'fail';
    if (rule !== 'rerun' && rule !== 'fail' && typeof rule !== 'function') {
      return Promise.reject(stepRuleInvalid(this.#s.tool, name, rule));
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
    return callStepContext(name, providerKey(tenant, tool, key, name, token), fence.attempt, this.#s.signal);
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
        const { held, fence, waitMs } = this.#s;
        // An earlier attempt of this process may be running it still: its end, not the record, says what it did.
        const ended = await held.ended(HeldSteps.runningKey(fence.id, name), waitMs, this.#s.signal());
        const heldKey = this.#token ? HeldSteps.key(fence.id, this.#token, name) : undefined;
        const heldText = heldKey ? held.get(heldKey) : undefined;
        if (heldText !== undefined) {
          // This process finished it and could not save it then: save it now, never run it again.
          const value = await this.#saveResult(name, heldText);
          this.#s.held.release(heldKey!);
          scope.end('replayed', undefined, value);
          return value;
        }
        if (ended === 'rerun') return await this.#execute(name, fn, rule, scope);
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
    const { store, fence, held } = this.#s;
    // Until the function has run, the step had no effect: a later attempt here that waits for it reruns it.
    const ended = held.running(HeldSteps.runningKey(fence.id, name));
    let end: StepEnd = 'rerun';
    try {
      const token = await store.startStep(fence, name, this.#token ?? randomBytes(18).toString('base64url'));
      if (token === undefined) throw this.#leaseLost(name);
      this.#token = token;
      let value: unknown;
      try {
        end = 'unknown';
        value = await scope.run(() => fn(this.#context(name)));
      } catch (error) {
        if (error instanceof OutcomeUnknownError) {
          // The record stays `started`: the next attempt applies the rule. Only `'fail'` decides now.
          if (rule === 'fail') throw this.#unknown(name, 'reported that its outcome is unknown', error);
          throw stepReportedUnknown(this.#s.tool, name, error, rule);
        }
        // The step's own failure: recorded, so the next attempt runs it again rather than calling it unknown.
        await store
          .finishStep(fence, name, 'failed', null, toStoredError(error, false))
          .catch(() => undefined);
        end = 'rerun';
        throw error;
      }
      // Its effect happened: a value that cannot be stored leaves the record started (unknown), never "failed".
      const text = this.#jsonOf(name, value, 'returned');
      const heldKey = HeldSteps.key(fence.id, token, name);
      held.hold(heldKey, text);
      end = 'held';
      ended(end);
      const result = await this.#saveResult(name, text);
      held.release(heldKey);
      scope.end('executed', undefined, result);
      return result;
    } finally {
      ended(end);
    }
  }

  /** Saves a step's result under the fence, retrying briefly; the value the handler gets is its JSON form. */
  async #saveResult(name: string, text: string): Promise<unknown> {
    const { store, fence } = this.#s;
    let saved: boolean;
    try {
      saved = await retryWrite(() => store.finishStep(fence, name, 'succeeded', text, null));
    } catch (error) {
      throw stepNotSaved(this.#s.tool, name, error);
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
      throw stepNotJson(this.#s.tool, name, what, error);
    }
  }

  #unknown(name: string, what: string, cause?: unknown): OutcomeUnknownError {
    const key = this.#token ? this.#context(name).key : 'not drawn yet';
    const error = stepUnknown(this.#s.tool, this.#s.tenant, name, what, key, cause);
    DECIDED_UNKNOWN.add(error);
    return error;
  }

  #leaseLost(name: string): ToolLedgerError {
    return stepLeaseLost(this.#s.tool, name);
  }
}
