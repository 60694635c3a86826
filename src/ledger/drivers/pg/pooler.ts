import { checkoutWithin, type PgPoolLike, withinMs } from './client.js';
import { type OpenConnection, send } from './reserved.js';

/**
 * Whether a pooler in transaction mode sits in front of Postgres: unknown until the first LISTEN (or a lost
 * prepared statement) finds out. Through such a pooler LISTEN must never be sent: the session that listens is
 * handed to other clients, and with PgBouncer 1.18 answers then reach the wrong client (a claim read another
 * statement's row and ran its handler a second time, in this project's tests). Waiters poll instead.
 */
export const POOLER_STATES = ['unknown', 'absent', 'present'] as const;
export type PoolerState = (typeof POOLER_STATES)[number];

export const POOLER_EVENTS = [
  /** The probe ran its rounds and saw no sign of a pooler. */
  'probed_clean',
  /** A sign of a pooler: the probe saw backends move, or a prepared statement went missing between connections. */
  'found',
] as const;
export type PoolerEvent = (typeof POOLER_EVENTS)[number];

/**
 * Where each event leads from each state; `undefined` means the event cannot happen there (a bug if it does).
 * Evidence of a pooler is final: nothing leads back from `present`. A clean probe that ends after a lost statement
 * found the pooler leaves it found. Only one probe runs, and only while the state is unknown.
 */
export const POOLER_TRANSITIONS: {
  readonly [S in PoolerState]: { readonly [E in PoolerEvent]: PoolerState | undefined };
} = {
  unknown: { probed_clean: 'absent', found: 'present' },
  absent: { probed_clean: undefined, found: 'present' },
  present: { probed_clean: 'present', found: 'present' },
};

export const POOLER_WARNING_CODE = 'TOOL_LEDGER_POOLER';

/**
 * Said once per driver when a pooler showed itself: the one sign of a pooler in transaction mode that the ledger
 * can see without being told.
 */
function poolerWarning(evidence: string): string {
  return `tool-ledger: a pooler in transaction mode sits in front of Postgres (PgBouncer, RDS Proxy, Supavisor): ${evidence}. The ledger sends unnamed statements (pass preparedStatements: false to start that way) and no LISTEN, which does not work through transaction pooling: a duplicate call waiting for a running key polls instead, and sees its completion within 0.6 s plus one round trip (docs/operations.md, "PgBouncer").`;
}

/** The evidence of a named statement lost between connections, as the warning says it. */
export function statementLostEvidence(error: unknown): string {
  const detail = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  return `a prepared statement was lost between connections (${detail}${typeof code === 'string' && !detail.includes(code) ? ` [${code}]` : ''})`;
}

/** The pg driver's knowledge of a pooler in front of Postgres, as a state machine (`POOLER_TRANSITIONS`). */
export class PoolerDetector {
  readonly #pool: PgPoolLike;
  readonly #answerTimeoutMs: number;
  #state: PoolerState = 'unknown';
  #warned = false;
  /** One probe at a time; one that failed (a full pool, a dead connection) is tried again by the next LISTEN. */
  #probing: Promise<void> | undefined;

  constructor(pool: PgPoolLike, answerTimeoutMs: number) {
    this.#pool = pool;
    this.#answerTimeoutMs = answerTimeoutMs;
  }

  get state(): PoolerState {
    return this.#state;
  }

  /** A sign of a pooler: from now on no LISTEN, and a warning, once. */
  found(evidence: string): void {
    this.#move('found');
    if (this.#warned) return;
    this.#warned = true;
    process.emitWarning(poolerWarning(evidence), { code: POOLER_WARNING_CODE });
  }

  /** Probes through `connection` (the reserved one) unless a probe already ran or runs. */
  probe(connection: OpenConnection): Promise<void> {
    this.#probing ??= this.#probe(connection).catch((error: unknown) => {
      this.#probing = undefined;
      throw error;
    });
    return this.#probing;
  }

  #move(event: PoolerEvent): void {
    const next = POOLER_TRANSITIONS[this.#state][event];
    if (next === undefined) throw new Error(`tool-ledger bug: pooler ${this.#state} --${event}--> nowhere`);
    this.#state = next;
  }

  /**
   * Finds a pooler in transaction mode before the first LISTEN: the reserved connection's backend is read, then a
   * pool client holds a transaction open, then the reserved connection's backend is read again. On a connection
   * of its own, the backend never changes and the pool client's is another one; through transaction pooling the
   * pool client is handed the backend the reserved connection just released (PgBouncer reuses the most recent
   * one), or the reserved connection lands on another. Three rounds, so a busy pool's churn cannot hide it.
   */
  async #probe(connection: OpenConnection): Promise<void> {
    const ms = this.#answerTimeoutMs;
    const pid = async (q: (text: string) => Promise<{ rows: Array<{ pid: number }> }>) =>
      (await q('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
    for (let round = 0; round < 3 && this.#state === 'unknown'; round++) {
      const own = () => send<{ pid: number }>(connection, 'SELECT pg_backend_pid() AS pid', undefined, ms);
      const first = await pid(own);
      const onError = () => {};
      const other = await checkoutWithin(this.#pool, ms, onError);
      let broken: Error | true | undefined;
      try {
        const inTx = (text: string) => withinMs(other.query<{ pid: number }>(text), ms);
        await inTx('BEGIN');
        const held = await pid(inTx);
        const again = await pid(own);
        await inTx('COMMIT');
        if (first !== again)
          this.found(`the reserved connection's backend changed from ${first} to ${again}`);
        else if (held === first)
          this.found(`a pool client was handed the reserved connection's backend ${first}`);
      } catch (error) {
        broken = error instanceof Error ? error : true;
        throw error;
      } finally {
        other.removeListener?.('error', onError);
        other.release(broken);
      }
    }
    this.#move('probed_clean');
  }
}
