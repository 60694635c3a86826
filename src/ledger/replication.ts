import type { Queryable } from '../contract/types.js';

/**
 * What the primary says of its standbys, as far as this user may see: `pg_stat_replication` shows every standby,
 * but its `sync_state` only to superusers and `pg_monitor` members (NULL otherwise).
 */
export function replicationStateSql(): string {
  return `SELECT count(*)::int AS standbys,
  count(*) FILTER (WHERE sync_state = 'async')::int AS async,
  count(*) FILTER (WHERE sync_state IS NULL)::int AS unknown,
  pg_catalog.current_setting('synchronous_standby_names') AS names,
  pg_catalog.current_setting('synchronous_commit') AS commit
FROM pg_catalog.pg_stat_replication`;
}

export const ASYNC_STANDBY_WARNING_CODE = 'TOOL_LEDGER_ASYNC_STANDBY';

interface ReplicationState {
  readonly standbys: number;
  readonly async: number;
  readonly unknown: number;
  readonly names: string;
  readonly commit: string;
}

/**
 * Why a failover to a standby could lose acknowledged completions (the next retry of such a key runs it again),
 * or undefined when no standby is asynchronous or this user may not tell. A completion is safe on a standby only
 * when the commit waited for it: the standby named in `synchronous_standby_names` and `synchronous_commit` at
 * `on` or `remote_apply` (`remote_write` survives a primary crash but not a crash of both machines).
 */
export function asyncStandbyWarning(state: ReplicationState): string | undefined {
  if (state.standbys === 0 || state.unknown === state.standbys) return undefined;
  const localCommit = state.commit === 'local' || state.commit === 'off';
  if (state.async === 0 && !localCommit) return undefined;
  const what = localCommit
    ? `synchronous_commit = ${state.commit}, so no standby is waited for`
    : `${state.async} of ${state.standbys} standbys ${state.async === 1 ? 'is' : 'are'} asynchronous (synchronous_standby_names = '${state.names}')`;
  return `tool-ledger: ${what}. A failover to an asynchronous standby loses the completions it had not received yet, and the next retry of those keys runs their tools again (docs/operations.md, "Failover"). Name the standbys you fail over to in synchronous_standby_names, with synchronous_commit = on or remote_apply.`;
}

/** Reads the replication state and warns once when a standby is asynchronous. Never fails the start. */
export async function warnAboutAsyncStandbys(db: Queryable): Promise<string | undefined> {
  try {
    const { rows } = await db.query<ReplicationState>(replicationStateSql());
    const warning = rows[0] ? asyncStandbyWarning(rows[0]) : undefined;
    if (warning) process.emitWarning(warning, { code: ASYNC_STANDBY_WARNING_CODE });
    return warning;
  } catch {
    // A server or a user that cannot say (a standby, a pooler's admin rules, no privilege): nothing to warn of.
    return undefined;
  }
}
