/**
 * What support reads and writes through: one connection (the CLI's) or a pool (the console's). Every value travels
 * as a bound parameter; no statement of support/ is built from a value.
 */
export interface SupportQuery {
  query<R>(text: string, params?: unknown[]): Promise<R[]>;
}

export interface SupportDb extends SupportQuery {
  /**
   * Runs `fn` in one transaction on one connection (BEGIN, COMMIT; ROLLBACK when it throws): a decision and its
   * audit entries commit together or not at all.
   */
  transaction<T>(fn: (tx: SupportQuery) => Promise<T>): Promise<T>;
}

/** Support's connection in the shape the ledger's own helpers take (`Queryable`). */
export function queryableOf(db: SupportQuery) {
  return {
    query: async <R>(text: string, params?: unknown[]) => ({ rows: await db.query<R>(text, params) }),
  };
}
