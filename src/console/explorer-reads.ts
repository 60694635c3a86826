import { ToolLedgerError } from '../contract/errors.js';
import type { SupportDb } from '../support/db.js';
import {
  explorerOverviewSql,
  explorerRunSql,
  explorerSearchSql,
  explorerUnknownSql,
} from '../support/explorer-sql.js';
import type { KeyForm } from '../support/key-form.js';
import { SupportRefusal } from '../support/refusal.js';
import { type InspectRow, runData } from '../support/run-view.js';
import { MAX_SEARCH_WINDOW_MS, SEARCH_PAGE_SIZE, type SearchFilters } from '../support/search.js';
import type { ResolvedConsoleOptions } from './options.js';
import type { UnknownItem } from './pages/inbox.js';
import type { OverviewRow } from './pages/overview.js';
import { INBOX_LIMIT, type PageReads, type RunPageData, type SearchAnswer } from './reads.js';

// The console's pages as the explorer's read-only role sees the ledger (postgres/explorer.sql): one view without
// user ids, results, error messages, steps or audit, and keys raw only where safe, else as key_hash. Said on every
// page, so nobody takes an empty column for an empty record.

const LIMITED =
  "Read through the explorer's view (postgres/explorer.sql) as its read-only role: user ids, results, error messages, steps and the audit history are not shown, and keys only where safe (else their key_hash). Connect as a role that may read the ledger's tables for them.";

interface ViewRow {
  id: string;
  tenant_id: string;
  tool_name: string;
  idempotency_key: string | null;
  key_hash: string | null;
  status: string;
  final: boolean;
  attempt: number;
  conflict_count: number;
  last_conflict_at: Date | null;
  parameter_hash: string;
  job_id: string | null;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  created_at: Date;
  created_at_text: string;
  started_at: Date;
  updated_at: Date;
  completed_at: Date | null;
  expires_at: Date;
  error_name: string | null;
  error_code: string | null;
  trace_id: string | null;
  lease_lapsed: boolean | null;
  db_now: Date;
}

/** The key as the view gives it: raw where safe, else its HMAC. */
const keyOf = (r: Pick<ViewRow, 'idempotency_key' | 'key_hash'>): KeyForm => ({
  key: r.idempotency_key,
  keyHash: r.idempotency_key === null ? r.key_hash : null,
});

/** The error's machine fields, all the view keeps of it. */
const errorOf = (r: Pick<ViewRow, 'error_name' | 'error_code'>) =>
  r.error_name === null && r.error_code === null ? null : { name: r.error_name, code: r.error_code };

export class ExplorerReads implements PageReads {
  readonly limited = LIMITED;
  readonly #db: SupportDb;
  readonly #options: ResolvedConsoleOptions;
  readonly #explorer: string;

  constructor(db: SupportDb, options: ResolvedConsoleOptions, explorer: string) {
    this.#db = db;
    this.#options = options;
    this.#explorer = explorer;
  }

  /** The view hashes keys itself; the role may not read the secret. */
  async secret(): Promise<undefined> {
    return undefined;
  }

  /** No decision is made through this role (the console refuses --allow-writes with it). */
  async row(): Promise<InspectRow | undefined> {
    return undefined;
  }

  async run(id: string): Promise<RunPageData | undefined> {
    if (!/^\d{1,19}$/.test(id)) return undefined;
    const [r] = await this.#db.query<ViewRow>(explorerRunSql(this.#explorer), [id]);
    if (r === undefined) return undefined;
    const row: InspectRow = {
      ...r,
      idempotency_key: '',
      user_id: null,
      result_json: null,
      error_json: errorOf(r),
      span_id: null,
      steps: null,
    };
    const jaegerUrl = this.#options.jaegerUrl;
    const data = runData(row, keyOf(r), null, jaegerUrl ?? '');
    return {
      data: { ...data, jaegerUrl: jaegerUrl === undefined ? null : data.jaegerUrl },
      audit: [],
      // The trace timeline searches by the raw key, which this role does not read: the run's own trace is linked.
      timeline: { kind: 'unconfigured', jaegerLink: jaegerUrl === undefined ? null : data.jaegerUrl },
    };
  }

  async search(filters: SearchFilters, cursor: string | undefined): Promise<SearchAnswer> {
    if (filters.user)
      throw new SupportRefusal(
        'invalid',
        "The explorer's view has no user ids: search by key, tenant, tool, status or time.",
      );
    if (!(filters.from < filters.to))
      throw new SupportRefusal('invalid', 'The time range is empty: "from" must be before "to".');
    if (!filters.key && filters.to.getTime() - filters.from.getTime() > MAX_SEARCH_WINDOW_MS)
      throw new SupportRefusal('invalid', 'Search at most 93 days at a time without a key.');
    const after = /^(\d{4}-\d{2}-\d{2} [0-9:.+-]{8,40})\|(\d{1,19})$/.exec(cursor ?? '');
    if (cursor && after === null)
      throw new SupportRefusal('invalid', 'The page cursor is not one this console made.');
    const rows = await this.#db.query<ViewRow>(explorerSearchSql(this.#explorer), [
      filters.key || null,
      filters.tenant || null,
      filters.tool || null,
      filters.status || null,
      filters.from,
      filters.to,
      after?.[1] ?? null,
      after?.[2] ?? null,
      SEARCH_PAGE_SIZE + 1,
    ]);
    const page = rows.slice(0, SEARCH_PAGE_SIZE);
    const last = page.at(-1);
    return {
      result: {
        hits: page.map((r) => ({
          id: r.id,
          tenant: r.tenant_id,
          tool: r.tool_name,
          key: filters.key ? { key: filters.key, keyHash: null } : keyOf(r),
          user: null,
          status: r.status,
          final: r.final,
          attempt: r.attempt,
          conflictCount: r.conflict_count,
          leaseLapsed: Boolean(r.lease_lapsed),
          createdAt: r.created_at,
          updatedAt: r.updated_at,
          traceId: r.trace_id,
        })),
        next: rows.length > SEARCH_PAGE_SIZE && last ? `${last.created_at_text}|${last.id}` : null,
      },
      // The forget audit is not in the view.
      forgotten: [],
    };
  }

  async unknownInbox(): Promise<UnknownItem[]> {
    const rows = await this.#db.query<ViewRow>(explorerUnknownSql(this.#explorer), [INBOX_LIMIT]);
    return rows.map((r) => ({
      id: r.id,
      tenant: r.tenant_id,
      tool: r.tool_name,
      key: keyOf(r),
      attempt: r.attempt,
      updatedAt: r.updated_at,
      why: 'not shown: the steps and the recorded message are not in the explorer’s view',
      error: errorOf(r),
    }));
  }

  async overview(hours: number): Promise<OverviewRow[]> {
    const to = new Date(Date.now() + 60_000);
    const from = new Date(to.getTime() - hours * 3600 * 1000 - 60_000);
    const rows = await this.#db.query<{
      tool_name: string;
      status: string;
      count: string;
      conflicts: string;
      stale: string;
      expired: string;
    }>(explorerOverviewSql(this.#explorer), [from, to, null]);
    return rows.map((r) => ({
      tool: r.tool_name,
      status: r.status,
      count: Number(r.count),
      conflicts: Number(r.conflicts),
      stale: Number(r.stale),
      expired: Number(r.expired),
    }));
  }
}

/** Refuses writes through the explorer's role: it may read one view and write nothing. */
export function explorerWritesRefused(): ToolLedgerError {
  return new ToolLedgerError(
    'CONFIG_INVALID',
    "This database role reads only the explorer's view (postgres/explorer.sql), so the console cannot write with it: start it without --allow-writes, or connect as a role that may update the ledger's tables.",
  );
}
