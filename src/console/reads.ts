import { auditEntriesOf } from '../support/audit.js';
import type { SupportDb } from '../support/db.js';
import { type ForgottenRecord, forgottenRecords } from '../support/forget.js';
import { keyForm } from '../support/key-form.js';
import { settlementsOf } from '../support/resolve.js';
import {
  type InspectRow,
  type RunData,
  runData,
  scrubStoredError,
  unknownReason,
} from '../support/run-view.js';
import { type SearchFilters, type SearchResult, searchRuns } from '../support/search.js';
import { overviewSql, unknownInboxSql } from '../support/search-sql.js';
import { supportSecret } from '../support/secret.js';
import { runByIdSql } from '../support/sql.js';
import { keyStory } from '../support/trace.js';
import type { ResolvedConsoleOptions } from './options.js';
import type { UnknownItem } from './pages/inbox.js';
import type { OverviewRow } from './pages/overview.js';
import type { AuditEntry, Timeline } from './pages/run.js';

// What the console's pages read, through support/: the same statements, views and scrubbing as the CLI.

export const INBOX_LIMIT = 100;

/** A search's answer: the runs found, and for a key with none, the records of its being forgotten. */
export interface SearchAnswer {
  readonly result: SearchResult;
  readonly forgotten: readonly ForgottenRecord[];
}

/** A run as its page shows it. */
export interface RunPageData {
  readonly data: RunData;
  readonly audit: readonly AuditEntry[];
  readonly timeline: Timeline;
}

/** What the pages read: from the ledger's tables (`ConsoleReads`) or the explorer's view (`ExplorerReads`). */
export interface PageReads {
  /** What the pages cannot show with this database role, said on every page; undefined when they show it all. */
  readonly limited: string | undefined;
  /** The key-hash secret, read for each page: a `rotate-key-secret` shows at once. */
  secret(): Promise<string | undefined>;
  /** A run's row, for a decision on it. */
  row(id: string): Promise<InspectRow | undefined>;
  run(id: string): Promise<RunPageData | undefined>;
  search(filters: SearchFilters, cursor: string | undefined): Promise<SearchAnswer>;
  unknownInbox(): Promise<UnknownItem[]>;
  overview(hours: number): Promise<OverviewRow[]>;
}

export class ConsoleReads implements PageReads {
  readonly limited = undefined;
  readonly #db: SupportDb;
  readonly #options: ResolvedConsoleOptions;

  constructor(db: SupportDb, options: ResolvedConsoleOptions) {
    this.#db = db;
    this.#options = options;
  }

  async secret(): Promise<string | undefined> {
    return (await supportSecret(this.#options.env, this.#db, this.#options.schema))?.secret;
  }

  async row(id: string): Promise<InspectRow | undefined> {
    if (!/^\d{1,19}$/.test(id)) return undefined;
    const [row] = await this.#db.query<InspectRow>(runByIdSql(this.#options.schema), [id]);
    return row;
  }

  /** A run as its page shows it, with its audit history and trace timeline. */
  async run(id: string): Promise<RunPageData | undefined> {
    const row = await this.row(id);
    if (row === undefined) return undefined;
    const secret = await this.secret();
    const key = keyForm(row.idempotency_key, secret);
    const data = runData(
      row,
      key,
      row.user_id === null ? null : keyForm(row.user_id, secret),
      this.#options.jaegerUrl ?? '',
    );
    const audit = await this.audit(id);
    const { jaegerUrl, logsUrl } = this.#options;
    const timeline: Timeline =
      jaegerUrl !== undefined && logsUrl !== undefined
        ? {
            kind: 'story',
            story: await keyStory({
              key,
              tenant: row.tenant_id,
              tool: row.tool_name,
              since: new Date(row.created_at.getTime() - 5 * 60_000),
              jaegerUrl,
              logsUrl,
              runTraceId: row.trace_id,
            }),
          }
        : { kind: 'unconfigured', jaegerLink: jaegerUrl === undefined ? null : data.jaegerUrl };
    return {
      data: { ...data, jaegerUrl: jaegerUrl === undefined ? null : data.jaegerUrl },
      audit,
      timeline,
    };
  }

  /** The decisions recorded for a run: its settlements (approvals join them once the ledger records them). */
  async audit(id: string): Promise<AuditEntry[]> {
    const settled = await settlementsOf(this.#db, this.#options.schema, id);
    const entries: AuditEntry[] = settled.map((r) => ({
      action: 'resolve',
      by: r.by,
      at: r.at,
      reason: r.reason,
      detail: `settled as ${r.resolution}`,
    }));
    // Approvals and declines, from the hash-chained audit (reasons scrubbed by support/audit.ts); its resolves are
    // the settlements above, which also hold those from before the chain.
    for (const e of await auditEntriesOf(this.#db, this.#options.schema, id)) {
      if (e.action === 'resolve' || e.action === 'forget') continue;
      entries.push({ action: e.action, by: e.by, at: e.at, reason: e.reason, detail: 'audit chain' });
    }
    return entries.sort((a, b) => a.at.getTime() - b.at.getTime());
  }

  async search(filters: SearchFilters, cursor: string | undefined): Promise<SearchAnswer> {
    const secret = await this.secret();
    const { schema } = this.#options;
    const result = await searchRuns(this.#db, schema, filters, secret, cursor);
    // A key with no run may have been forgotten: say when, by whom and why, as inspect does.
    const forgotten =
      filters.key && result.hits.length === 0
        ? await forgottenRecords(
            this.#db,
            schema,
            filters.key,
            secret,
            filters.tenant || undefined,
            filters.tool || undefined,
          )
        : [];
    return { result, forgotten };
  }

  async unknownInbox(): Promise<UnknownItem[]> {
    const rows = await this.#db.query<InspectRow>(unknownInboxSql(this.#options.schema), [null, INBOX_LIMIT]);
    const secret = await this.secret();
    return rows.map((r) => ({
      id: r.id,
      tenant: r.tenant_id,
      tool: r.tool_name,
      key: keyForm(r.idempotency_key, secret),
      attempt: r.attempt,
      updatedAt: r.updated_at,
      why: unknownReason(r),
      error: scrubStoredError(r.error_json),
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
    }>(overviewSql(this.#options.schema), [from, to, null]);
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
