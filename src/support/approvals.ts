import type { AwaitingApproval } from '../contract/approval.js';
import { type KeyForm, keyForm } from './key-form.js';
import { scrubValue } from './scrub.js';

/**
 * A call awaiting approval as support shows it (the console's inbox, `tool-ledger list --status
 * awaiting_approval`): the key and the user the way telemetry shows them (raw only when safe, else their HMAC), and
 * the arguments, which `ledger.approvals.list` returns raw, scrubbed as `inspect` scrubs results.
 */
export interface AwaitingView {
  readonly runId: string;
  readonly tenant: string;
  readonly tool: string;
  readonly key: KeyForm;
  readonly user: KeyForm | null;
  readonly requestedAt: Date;
  readonly deadline: Date;
  readonly arguments: unknown;
}

export function awaitingView(awaiting: AwaitingApproval, secret: string | undefined): AwaitingView {
  return {
    runId: awaiting.runId,
    tenant: awaiting.tenant,
    tool: awaiting.tool,
    key: keyForm(awaiting.key, secret),
    user: awaiting.user === undefined ? null : keyForm(awaiting.user, secret),
    requestedAt: awaiting.requestedAt,
    deadline: awaiting.deadline,
    arguments: scrubValue(awaiting.arguments),
  };
}
