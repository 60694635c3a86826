import { describe, expect, it } from 'vitest';
import { createLedger } from '../../src/index.js';
import { verifyAudit } from '../../src/ledger/audit/verify.js';
import { databaseUrl, ownSchemas } from '../support/db.js';

// The audit chain of decisions (docs/ledger.md, "The audit chain") on real Postgres: append-only for the ledger's
// role, and a deleted or altered entry found by recomputing the chain.

describe('the audit chain', () => {
  const { admin, fresh } = ownSchemas('audit');

  async function decided(count: number) {
    const schema = fresh();
    const ledger = await createLedger({ connectionString: databaseUrl(), schema, telemetry: false });
    const tool = ledger.tool({ name: 'wire', kind: 'mutation', approval: 'required', handler: () => 'sent' });
    for (let i = 0; i < count; i++) {
      await tool.call({ n: i }, { key: `k${i}`, tenant: 'acme' }).catch(() => {});
      if (i % 2 === 0) await ledger.approve({ tenant: 'acme', tool: 'wire', key: `k${i}`, by: `a${i}` });
      else await ledger.decline({ tenant: 'acme', tool: 'wire', key: `k${i}`, by: `a${i}`, reason: 'no' });
    }
    await ledger.close();
    return schema;
  }

  const ids = async (schema: string) =>
    (await admin.query(`SELECT id::text AS id FROM "${schema}".tool_ledger_audit ORDER BY id`)).rows.map(
      (r) => r.id as string,
    );

  it('holds for the decisions as written, and refuses UPDATE, DELETE and TRUNCATE', async () => {
    const schema = await decided(4);
    const result = await verifyAudit(admin, schema);
    expect(result).toMatchObject({ entries: 4, tenants: 1, breaks: [] });
    expect(result.heads.get('acme')?.hash).toMatch(/^[0-9a-f]{64}$/);
    for (const statement of [
      `UPDATE "${schema}".tool_ledger_audit SET reason = 'x'`,
      `DELETE FROM "${schema}".tool_ledger_audit`,
      `TRUNCATE "${schema}".tool_ledger_audit`,
    ]) {
      await expect(admin.query(statement)).rejects.toThrow(/append-only/);
    }
  });

  it('names a deleted entry as a gap and an altered one as a hash mismatch', async () => {
    const deleted = await decided(4);
    const [, second, third] = await ids(deleted);
    const client = await admin.connect();
    try {
      // Behind the trigger's back, as a superuser can.
      await client.query(`SET session_replication_role = replica`);
      await client.query(`DELETE FROM "${deleted}".tool_ledger_audit WHERE id = $1`, [second]);
      const altered = await decided(3);
      const [, middle] = await ids(altered);
      await client.query(`UPDATE "${altered}".tool_ledger_audit SET actor = 'mallory' WHERE id = $1`, [
        middle,
      ]);
      await client.query(`SET session_replication_role = DEFAULT`);
      const gap = await verifyAudit(admin, deleted);
      expect(gap.breaks).toEqual([expect.objectContaining({ tenant: 'acme', id: third, kind: 'missing' })]);
      const changed = await verifyAudit(admin, altered, 'acme');
      expect(changed.breaks).toEqual([
        expect.objectContaining({ tenant: 'acme', id: middle, kind: 'altered' }),
      ]);
    } finally {
      client.release();
    }
  });
});
