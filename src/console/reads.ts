import type { SupportDb } from '../support/db.js';
import { keyForm } from '../support/key-form.js';
import { settlementsOf } from '../support/resolve.js';
import { type InspectRow, runData, scrubStoredError, unknownReason } from '../support/run-view.js';
import { scrubText } from '../support/scrub.js';
import {
  auditChainByRunSql,
  auditChainExistsSql,
  overviewSql,
  unknownInboxSql,
} from '../support/search-sql.js';
import { supportSecret } from '../support/secret.js';
import { runByIdSql } from '../support/sql.js';
import { keyStory } from '../support/trace.js';
import type { ResolvedConsoleOptions } from './options.js';
import type { UnknownItem } from './pages/inbox.js';
import type { OverviewRow } from './pages/overview.js';
import type { AuditEntry, Timeline } from './pages/run.js';

// What the console's pages read, through support/: the same statements, views and scrubbing as the CLI.

export const INBOX_LIMIT = 100;

export class ConsoleReads {
  readonly #db: SupportDb;
  readonly #options: ResolvedConsoleOptions;

  constructor(db: SupportDb, options: ResolvedConsoleOptions) {
    this.#db = db;
    this.#options = options;
  }

  /** The key-hash secret, read for each page: a `rotate-key-secret` shows at once. */
  async secret(): Promise<string | undefined> {
    return (await supportSecret(this.#options.env, this.#db, this.#options.schema))?.secret;
  }

  async row(id: string): Promise<InspectRow | undefined> {
    if (!/^\d{1,19}$/.test(id)) return undefined;
    const [row] = await this.#db.query<InspectRow>(runByIdSql(this.#options.schema), [id]);
    return row;
  }

  /** A run as its page shows it, with its audit history and trace timeline. */
  async run(id: string) {
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
      row,
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
    // Approvals and declines, from the hash-chained audit (reasons are free text: scrubbed).
    const [chain] = await this.#db.query<{ exists: boolean }>(auditChainExistsSql, [this.#options.schema]);
    if (chain?.exists) {
      const rows = await this.#db.query<{ at: Date; actor: string; action: string; reason: string | null }>(
        auditChainByRunSql(this.#options.schema),
        [id],
      );
      for (const r of rows) {
        if (r.action === 'resolve' || r.action === 'forget') continue;
        entries.push({
          action: r.action,
          by: r.actor,
          at: r.at,
          reason: r.reason === null ? null : scrubText(r.reason),
          detail: 'audit chain',
        });
      }
    }
    return entries.sort((a, b) => a.at.getTime() - b.at.getTime());
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
