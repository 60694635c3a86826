import { CITUS_DISTRIBUTION, DISTRIBUTION_SETTING } from '../ledger/citus-sql.js';
import type { SupportDb } from './db.js';
import { type KeyForm, keyForm } from './key-form.js';
import { SupportRefusal } from './refusal.js';
import {
  distributionSettingSql,
  searchByKeyDistributedSql,
  searchByKeySql,
  searchRunsSql,
} from './search-sql.js';

/** What a search filters on; absent filters match everything. Without a key, the time range is bounded. */
export interface SearchFilters {
  /** The raw key as support typed it. Never put in a URL or a log line. */
  readonly key?: string | undefined;
  readonly tenant?: string | undefined;
  readonly tool?: string | undefined;
  readonly status?: string | undefined;
  /** The user id as the caller passed it. */
  readonly user?: string | undefined;
  /** Runs created at or after this (ignored with a key). */
  readonly from: Date;
  /** Runs created before this (ignored with a key). */
  readonly to: Date;
}

/** How far a search may reach back without a key: the created_at index narrows by time, and a window bounds it. */
export const MAX_SEARCH_WINDOW_MS = 93 * 24 * 3600 * 1000;
/** Rows per page. */
export const SEARCH_PAGE_SIZE = 50;
/** The runs of one key a search shows (one per tenant and tool). */
const MAX_KEY_HITS = SEARCH_PAGE_SIZE;

/** A run as a search lists it: no result, no error; the key and user as telemetry would show them. */
export interface SearchHit {
  readonly id: string;
  readonly tenant: string;
  readonly tool: string;
  readonly key: KeyForm;
  readonly user: KeyForm | null;
  readonly status: string;
  readonly final: boolean;
  readonly attempt: number;
  readonly conflictCount: number;
  readonly leaseLapsed: boolean;
  readonly createdAt: Date;
  readonly updatedAt: Date;
  readonly traceId: string | null;
}

export interface SearchResult {
  readonly hits: readonly SearchHit[];
  /** The cursor of the next page, or null on the last. Opaque: the last row's created_at and id. */
  readonly next: string | null;
}

interface HitRow {
  id: string;
  tenant_id: string;
  tool_name: string;
  idempotency_key: string;
  user_id: string | null;
  status: string;
  final: boolean;
  attempt: number;
  conflict_count: number;
  created_at: Date;
  created_at_text: string;
  updated_at: Date;
  trace_id: string | null;
  lease_lapsed: boolean | null;
}

/** Reads a cursor back: `created_at` as Postgres printed it (microseconds kept) and the id. */
function parseCursor(cursor: string | undefined): [string, string] | [null, null] {
  if (cursor === undefined || cursor === '') return [null, null];
  const match = /^(\d{4}-\d{2}-\d{2} [0-9:.+-]{8,40})\|(\d{1,19})$/.exec(cursor);
  if (match === null) throw new SupportRefusal('invalid', 'The page cursor is not one this console made.');
  return [match[1] as string, match[2] as string];
}

/** Whether the schema is distributed with Citus (its settings say so); a schema without settings is not. */
async function distributed(db: SupportDb, schema: string): Promise<boolean> {
  try {
    const [row] = await db.query<{ value: string }>(distributionSettingSql(schema), [DISTRIBUTION_SETTING]);
    return row?.value === CITUS_DISTRIBUTION;
  } catch (error) {
    if ((error as { code?: string }).code === '42P01') return false;
    throw error;
  }
}

/**
 * Searches runs, newest first, a page at a time. A searched key is shown as typed; other keys (and user ids) as
 * telemetry would show them, raw when safe, else their HMAC under `secret`.
 */
export async function searchRuns(
  db: SupportDb,
  schema: string,
  filters: SearchFilters,
  secret: string | undefined,
  cursor?: string,
): Promise<SearchResult> {
  if (!(filters.from < filters.to))
    throw new SupportRefusal('invalid', 'The time range is empty: "from" must be before "to".');
  if (filters.to.getTime() - filters.from.getTime() > MAX_SEARCH_WINDOW_MS && !filters.key) {
    throw new SupportRefusal(
      'invalid',
      'Search at most 93 days at a time without a key; narrow "from" and "to", or search by key.',
    );
  }
  const [afterAt, afterId] = parseCursor(cursor);
  // A key names its runs wherever they are in time (support knows the key, rarely when it was used), at most one
  // per tenant and tool: one page, the time range unused.
  const byKey = filters.key && (await distributed(db, schema)) ? searchByKeyDistributedSql : searchByKeySql;
  const rows = filters.key
    ? await db.query<HitRow>(byKey(schema), [
        filters.key,
        filters.tenant || null,
        filters.tool || null,
        filters.status || null,
        filters.user || null,
        MAX_KEY_HITS,
      ])
    : await db.query<HitRow>(searchRunsSql(schema), [
        null,
        filters.tenant || null,
        filters.tool || null,
        filters.status || null,
        filters.user || null,
        filters.from,
        filters.to,
        afterAt,
        afterId,
        SEARCH_PAGE_SIZE + 1,
      ]);
  const page = rows.slice(0, SEARCH_PAGE_SIZE);
  const last = page.at(-1);
  const hits = page.map((r) => ({
    id: r.id,
    tenant: r.tenant_id,
    tool: r.tool_name,
    key: filters.key ? { key: r.idempotency_key, keyHash: null } : keyForm(r.idempotency_key, secret),
    user: r.user_id === null ? null : keyForm(r.user_id, secret),
    status: r.status,
    final: r.final,
    attempt: r.attempt,
    conflictCount: r.conflict_count,
    leaseLapsed: Boolean(r.lease_lapsed),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    traceId: r.trace_id,
  }));
  return {
    hits,
    next: rows.length > SEARCH_PAGE_SIZE && last ? `${last.created_at_text}|${last.id}` : null,
  };
}
