// A pool that answers the ledger's statements at once, for the benches that price tool-ledger's own JavaScript
// (bench/profile.mjs, bench/telemetry-cpu.mjs). One copy, so a change to a statement's shape breaks both loudly
// instead of one quietly: any statement it does not know is an error naming it.
import { randomBytes } from 'node:crypto';

/** The rows the full claim (`WITH existing …`) returns for a key it inserted. */
function insertedClaimRow(values, id) {
  return {
    claim: 'inserted',
    id: String(id),
    user_id: values[3],
    parameter_hash: values[4],
    status: 'in_progress',
    final: false,
    attempt: 1,
    lease_owner: values[5],
    lease_remaining_ms: 30_000,
    result_json: null,
    error_json: null,
    job_id: null,
    trace_id: null,
    span_id: null,
    completed_at: null,
    expires_in_ms: 86_400_000,
    lease_live: true,
    takeover_due: false,
    waiting: false,
  };
}

/**
 * Answers a table-layout ledger started with `migrate: false`: the settings reads (no stored layout; one
 * key-hash secret, so telemetry on needs no insert), a fresh key's bare insert or full claim, and the completion.
 */
export function instantPool() {
  let id = 0;
  const secret = randomBytes(32).toString('hex');
  return {
    async query(config, parameters) {
      await null;
      const text = typeof config === 'string' ? config : config.text;
      const values = (typeof config === 'string' ? parameters : config.values) ?? [];
      if (text.startsWith('SELECT value FROM')) {
        return { rows: values[0] === 'key_hash_secret' ? [{ value: secret }] : [] };
      }
      // A fresh key's claim is the bare insert, which returns only the id.
      if (text.startsWith('INSERT INTO')) return { rows: [{ id: String(++id) }] };
      if (text.startsWith('WITH existing')) return { rows: [insertedClaimRow(values, ++id)] };
      if (text.startsWith('UPDATE')) {
        return { rows: [{ completed_at_ms: Date.now(), expires_in_ms: 86_400_000, notify: null }] };
      }
      throw new Error(`instant pool: no answer for ${text.slice(0, 60)}`);
    },
    async connect() {
      throw new Error('not used: the ledger is created with migrate: false and nobody waits');
    },
    async end() {},
  };
}
