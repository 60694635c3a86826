// One side of the rolling-upgrade check (scripts/upgrade-check.mjs), run as its own process from a project that
// installed a packed tool-ledger (copied there, so `tool-ledger` resolves from that project's node_modules).
// Opens a ledger on DATABASE_URL / UPGRADE_SCHEMA, prints {"ready":true}, then answers one JSON line per request
// line on stdin: {"id","op":"call","key","input"} -> {"id","outcome"} (the outcome or the error code), and
// {"id","op":"runs"} -> {"id","runs"} (how many times this process's handler ran). Closes the ledger at the end
// of stdin.
import { createInterface } from 'node:readline';
import { createLedger } from 'tool-ledger';

let runs = 0;
const ledger = await createLedger({
  connectionString: process.env.DATABASE_URL,
  schema: process.env.UPGRADE_SCHEMA,
  telemetry: false,
});
const tool = ledger.tool({
  name: 'transfer',
  kind: 'mutation',
  handler: async (input) => {
    runs++;
    await new Promise((resolve) => setTimeout(resolve, input.slowMs ?? 0));
    return { done: input.n };
  },
});
const answer = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);
answer({ ready: true });

const pending = [];
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === '') continue;
  const request = JSON.parse(line);
  if (request.op === 'runs') {
    answer({ id: request.id, runs });
    continue;
  }
  // Calls run concurrently, as a process serving many requests would run them.
  pending.push(
    tool.invoke(request.input, { key: request.key, tenant: 'acme' }).then(
      (report) => answer({ id: request.id, outcome: report.outcome }),
      (error) => answer({ id: request.id, outcome: error.code ?? String(error) }),
    ),
  );
}
await Promise.all(pending);
await ledger.close();
