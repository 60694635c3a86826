import { ToolLedgerError } from '../contract/errors.js';
import { supportSecret as resolveSecret, type SupportSecret } from '../support/secret.js';
import { CliError } from './cli-error.js';
import type { Db } from './db.js';

export { noSecretHelp, type SupportSecret } from '../support/secret.js';

/** support/secret.ts's `supportSecret`, its refusal of a weak secret said as the CLI says errors. */
export async function supportSecret(
  env: NodeJS.ProcessEnv,
  db: Db | undefined,
  schema: string,
): Promise<SupportSecret | undefined> {
  try {
    return await resolveSecret(env, db, schema);
  } catch (error) {
    if (error instanceof ToolLedgerError) throw new CliError(error.message, undefined, { cause: error });
    throw error;
  }
}
