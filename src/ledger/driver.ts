import type { Queryable } from '../contract/types.js';

/**
 * What the ledger needs from a database, beyond `query`: a transaction for transactional tools and for migrations,
 * and notifications so waiters sleep instead of polling.
 */
export interface Driver extends Queryable {
  readonly kind: 'pg' | 'pglite';
  /**
   * Statements that must not wait behind the pool (lease renewals): on pg, a connection of the driver's own,
   * shared with LISTEN.
   */
  readonly reserved: Queryable;
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * Whether the server parses and plans each of the driver's statements anew (unnamed statements: behind a pooler
   * in transaction mode, or `preparedStatements: false`), so the layout sends the hot path's server functions.
   */
  plansEveryStatement(): boolean;
  /** Subscribes to a notification channel. Resolves to an unsubscribe function. */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}
