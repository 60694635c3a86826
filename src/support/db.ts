/**
 * What support reads and writes through: one connection (the CLI's) or a pool (the console's). Every value travels
 * as a bound parameter; no statement of support/ is built from a value.
 */
export interface SupportDb {
  query<R>(text: string, params?: unknown[]): Promise<R[]>;
}
