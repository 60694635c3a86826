// `npm run demo`: one agent session against the embedded ledger (PGlite, no server), with telemetry.
// Set OTEL_EXPORTER_OTLP_ENDPOINT (for example http://localhost:4318 with `docker compose up -d`) to see the
// traces in Jaeger; otherwise a short summary of the spans is printed at the end. With DATABASE_URL set, the
// ledger is that Postgres database (under a tenant of its own per run), so the run can be inspected afterwards
// with the command the demo prints last.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { createLedger, type InvokeReport, ToolLedgerError } from '../../src/index.js';
import { startTelemetry } from '../../src/otel/index.js';

const telemetry = startTelemetry({ serviceName: 'tool-ledger-demo' });
const databaseUrl = process.env.DATABASE_URL;
const ledger = await createLedger(
  databaseUrl ? { connectionString: databaseUrl, waitSeconds: 5 } : { pglite: 'memory://', waitSeconds: 5 },
);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const invoices = new Map<string, { customer: string; amountCents: number }>();

const createInvoice = ledger.tool({
  name: 'create_invoice',
  kind: 'mutation',
  description: 'Creates an invoice for a customer.',
  input: z.object({ customer: z.string().min(1), amountCents: z.number().int().positive() }),
  handler: async ({ customer, amountCents }) => {
    await sleep(40); // a payment provider round trip
    const id = `inv_2026_${String(invoices.size + 1).padStart(4, '0')}`;
    invoices.set(id, { customer, amountCents });
    return { invoiceId: id, customer, amountCents };
  },
});

const startExport = ledger.tool({
  name: 'start_export',
  kind: 'job',
  description: 'Exports all invoices to CSV in the background.',
  handler: async () => {
    await sleep(300);
    return { file: 'invoices.csv', rows: invoices.size };
  },
});

type Row = {
  step: string;
  tool: string;
  key: string;
  outcome: string;
  attempt: string;
  detail: string;
};
const rows: Row[] = [];
/** The trace id of each key's original execution, as the calls' reports give it. */
const originalTrace = new Map<string, string>();

async function record(step: string, tool: string, key: string, run: () => Promise<InvokeReport<unknown>>) {
  try {
    const report = await run();
    if (report.originalSpan) originalTrace.set(key, report.originalSpan.traceId);
    const value = report.value as Record<string, unknown>;
    rows.push({
      step,
      tool,
      key,
      outcome: report.outcome,
      attempt: String(report.attempt),
      detail:
        'jobId' in value
          ? `job ${String(value.status)}${value.result ? ` ${JSON.stringify(value.result)}` : ''}`
          : `${String(value.invoiceId)}${report.waitedMs > 0 ? ` (waited ${report.waitedMs} ms)` : ''}`,
    });
  } catch (error) {
    const e = error as ToolLedgerError;
    rows.push({
      step,
      tool,
      key,
      outcome: e instanceof ToolLedgerError ? e.code : 'error',
      attempt: '-',
      detail: e.message,
    });
  }
}

// A database outlives the demo: a tenant per run keeps one run's keys from replaying the last run's results.
const session = { tenant: databaseUrl ? `demo-${randomBytes(3).toString('hex')}` : 'acme', user: 'agent-7' };
const first = { customer: 'cus_42', amountCents: 4500 };

await record('1 first call', 'create_invoice', 'inv-req-1', () =>
  createInvoice.invoke(first, { ...session, key: 'inv-req-1' }),
);
await record('2 retry after a timeout', 'create_invoice', 'inv-req-1', () =>
  createInvoice.invoke(first, { ...session, key: 'inv-req-1' }),
);
await record('3 changed instruction, new key', 'create_invoice', 'inv-req-2', () =>
  createInvoice.invoke({ customer: 'cus_42', amountCents: 5000 }, { ...session, key: 'inv-req-2' }),
);
await record('4 caller bug: key reused', 'create_invoice', 'inv-req-1', () =>
  createInvoice.invoke({ customer: 'cus_42', amountCents: 9900 }, { ...session, key: 'inv-req-1' }),
);
await Promise.all(
  Array.from({ length: 4 }, (_, i) =>
    record(`5 parallel duplicate #${i + 1}`, 'create_invoice', 'inv-req-3', () =>
      createInvoice.invoke({ customer: 'cus_77', amountCents: 1200 }, { ...session, key: 'inv-req-3' }),
    ),
  ),
);
await record('6 validation failure', 'create_invoice', 'inv-req-4', () =>
  createInvoice.invoke({ customer: '', amountCents: -1 } as never, { ...session, key: 'inv-req-4' }),
);
await record('7 start a long job', 'start_export', 'export-1', () =>
  startExport.invoke({}, { ...session, key: 'export-1' }),
);
await record('8 retry the job', 'start_export', 'export-1', () =>
  startExport.invoke({}, { ...session, key: 'export-1' }),
);
await sleep(400);
await record('9 retry once it finished', 'start_export', 'export-1', () =>
  startExport.invoke({}, { ...session, key: 'export-1' }),
);

console.log(`\ntool-ledger demo: one agent session on the embedded ledger (tenant ${session.tenant})\n`);
printTable(rows);
console.log(
  `side effects actually performed: ${invoices.size} invoices created (for 8 create_invoice calls)\n`,
);

await ledger.close();
console.log(telemetry.summary());
await telemetry.shutdown();
console.log(followUp());

/** The operator's next step: the trace to look for, and the command that tells the story of the key. */
function followUp(): string {
  const key = 'inv-req-1';
  const trace = originalTrace.get(key);
  const jaeger = 'http://localhost:16686';
  const command = `npx tool-ledger inspect --tenant ${session.tenant} --tool create_invoice --key ${key}`;
  return [
    `Follow key ${key} (executed once, replayed, then reused with other parameters):`,
    `  trace id of its original execution: ${trace ?? '- (no tracer: set OTEL_EXPORTER_OTLP_ENDPOINT)'}`,
    ...(trace ? [`  Jaeger: ${jaeger}/trace/${trace}   API: ${jaeger}/api/traces/${trace}`] : []),
    databaseUrl
      ? inspectWith(databaseUrl, command)
      : `  ${command}   (the embedded ledger is gone once the demo exits: run the demo with DATABASE_URL=postgres://… to inspect it afterwards)`,
  ].join('\n');
}

/**
 * The inspect command as it can be pasted: with the demo's URL in front when it holds no password, else with the
 * same DATABASE_URL the demo ran with (a masked password would not connect, and a real one is not printed).
 */
function inspectWith(url: string, command: string): string {
  let printable: string | undefined;
  try {
    printable = new URL(url).password === '' ? url : undefined;
  } catch {
    // The libpq keyword form: it may hold a password anywhere, so it is not printed.
  }
  return printable === undefined
    ? `  ${command}   (with DATABASE_URL set as for the demo; its password is not printed)`
    : `  DATABASE_URL=${printable} ${command}`;
}

/**
 * A plain table: no index column, no quotes, and long details wrapped at word boundaries onto further lines
 * (console.table quotes strings and the old truncation cut messages mid-word).
 */
function printTable(table: readonly Record<string, string>[]): void {
  const columns = Object.keys(table[0] ?? {});
  const detailWidth = 72;
  const wrap = (text: string): string[] => {
    const lines: string[] = [];
    let line = '';
    for (const word of text.split(/\s+/)) {
      if (line && line.length + 1 + word.length > detailWidth) {
        lines.push(line);
        line = word;
      } else {
        line = line ? `${line} ${word}` : word;
      }
    }
    return [...lines, line];
  };
  const cells = table.map((row) =>
    columns.map((c) => (c === 'detail' ? wrap(row[c] ?? '') : [row[c] ?? ''])),
  );
  const widths = columns.map((c, i) =>
    Math.max(c.length, ...cells.map((r) => Math.max(...r[i]!.map((l) => l.length)))),
  );
  const render = (parts: readonly string[]) =>
    parts
      .map((p, i) => p.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  console.log(render(columns));
  console.log(render(widths.map((w) => '-'.repeat(w))));
  for (const row of cells) {
    const height = Math.max(...row.map((lines) => lines.length));
    for (let n = 0; n < height; n++) console.log(render(row.map((lines) => lines[n] ?? '')));
  }
}
