import { createHash } from 'node:crypto';
import { classifyDriverError } from '../../driver-errors.js';
import type { PgPoolLike } from './client.js';

/** A named statement runs on pg's extended protocol with the plan cached per connection. */
interface NamedQuery {
  readonly name: string;
  readonly text: string;
  readonly values: unknown[] | undefined;
}

type Send = <R>(text: string, params?: unknown[]) => Promise<{ rows: R[] }>;

function statementName(text: string): string {
  return `tool_ledger_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
}

type QueryConstructor = new (text: string, values: unknown[] | undefined) => { name?: string };

/**
 * For a `pg.Pool`, a named statement as pg's own `Query`, built from the text so pg does not copy a config object
 * property by property (`normalizeQueryConfig`: 5 µs per statement, two statements per first execution). pg
 * runs a query object as given (it has `submit`); the name set afterwards makes it a prepared statement, as the
 * config's `name` would. Other pools get the plain config.
 */
function submittableQueryOf(
  pool: PgPoolLike,
): ((name: string, text: string, values: unknown[] | undefined) => object) | undefined {
  const Query = (pool as { Client?: { Query?: unknown } }).Client?.Query;
  if (typeof Query !== 'function' || typeof (Query.prototype as { submit?: unknown }).submit !== 'function') {
    return undefined;
  }
  const QueryClass = Query as QueryConstructor;
  return (name, text, values) => {
    const query = new QueryClass(text, values);
    query.name = name;
    return query;
  };
}

/**
 * The pool's statements: named (prepared once per connection) until a pooler shows it cannot keep them, unnamed
 * from then on. The ledger's statements are few and fixed per schema, so preparing them saves Postgres from
 * parsing and planning the claim's CTE on every call.
 */
export class PoolStatements {
  readonly #pool: PgPoolLike;
  readonly #names = new Map<string, string>();
  readonly #named: Send;
  readonly #onLost: (error: unknown) => void;
  #mode: 'named' | 'unnamed';

  /** `onLost` hears the first named statement a pooler lost: the sign of transaction pooling. */
  constructor(pool: PgPoolLike, preparedStatements: boolean, onLost: (error: unknown) => void) {
    this.#pool = pool;
    this.#mode = preparedStatements ? 'named' : 'unnamed';
    this.#onLost = onLost;
    const submittable = submittableQueryOf(pool);
    this.#named = submittable
      ? <R>(text: string, params?: unknown[]) =>
          (pool as unknown as { query(q: object): Promise<{ rows: R[] }> }).query(
            submittable(this.#nameOf(text), text, params),
          )
      : <R>(text: string, params?: unknown[]) =>
          (pool as unknown as { query(q: NamedQuery): Promise<{ rows: R[] }> }).query({
            name: this.#nameOf(text),
            text,
            values: params,
          });
  }

  /** Unnamed from the start (`preparedStatements: false`) or since a pooler lost a named statement. */
  get unnamed(): boolean {
    return this.#mode === 'unnamed';
  }

  /**
   * Not an async function: a first execution sends two statements, and an async frame with its await would be two
   * promises and two turns of the microtask queue each, where the named path's `catch` is one.
   */
  readonly query = <R>(text: string, params?: unknown[]): Promise<{ rows: R[] }> => {
    if (this.#mode === 'unnamed') return this.#pool.query<R>(text, params);
    return this.#named<R>(text, params).catch((error: unknown) =>
      this.#afterNamedFailed<R>(error, text, params),
    );
  };

  #afterNamedFailed<R>(error: unknown, text: string, params: unknown[] | undefined): Promise<{ rows: R[] }> {
    if (classifyDriverError(error).condition !== 'statement_lost') throw error;
    // The server refused the statement at Parse or Bind, before running anything, so sending it again is safe:
    // a claim or a completion is never lost or doubled by this retry.
    if (this.#mode === 'named') {
      this.#mode = 'unnamed';
      this.#onLost(error);
    }
    return this.#pool.query<R>(text, params);
  }

  #nameOf(text: string): string {
    let name = this.#names.get(text);
    if (name === undefined) {
      name = statementName(text);
      this.#names.set(text, name);
    }
    return name;
  }
}
