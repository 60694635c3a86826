import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { ApprovalRule } from '../contract/approval.js';
import type {
  HandlerContext,
  ToolKind,
  ToolOptions,
  UnknownOutcomeRule,
  UnknownRunContext,
} from '../contract/types.js';
import type { ResolvedConfig } from './ledger.js';
import { checkKnown, checkSeconds, invalid, MAX_TTL_SECONDS } from './limits.js';

// One tool's options (`ledger.tool()`) checked and resolved against the ledger's, frozen.

const TOOL_OPTION_NAMES = {
  name: true,
  kind: true,
  description: true,
  title: true,
  input: true,
  handler: true,
  volatileFields: true,
  transactional: true,
  destructive: true,
  isFinalError: true,
  resumeAbandoned: true,
  leaseSeconds: true,
  waitSeconds: true,
  ttlSeconds: true,
  onUnknown: true,
  approval: true,
  approvalTtlSeconds: true,
  approvalWaitSeconds: true,
} as const satisfies Record<keyof ToolOptions<undefined, unknown>, true>;

const TOOL_NAME = /^[\p{L}\p{N}_.\-:/]{1,128}$/u;
const KINDS: readonly ToolKind[] = ['read', 'mutation', 'job'];

/** One tool's settings with every default resolved. Internal. */
export interface ResolvedToolConfig {
  readonly name: string;
  readonly kind: ToolKind;
  readonly description: string | undefined;
  readonly title: string | undefined;
  readonly destructive: boolean;
  readonly input: StandardSchemaV1 | undefined;
  readonly handler: (input: unknown, ctx: HandlerContext) => unknown;
  readonly leaseSeconds: number;
  readonly waitMs: number;
  readonly ttlSeconds: number;
  readonly volatileFields: readonly string[];
  readonly transactional: boolean;
  readonly isFinalError: (error: unknown) => boolean;
  /** Whether a claim may take over a lapsed lease (jobs may opt out with `resumeAbandoned: false`). */
  readonly allowLeaseTakeover: boolean;
  readonly onUnknown: UnknownOutcomeRule<UnknownRunContext, unknown>;
  /** The tool's `approval` rule; undefined for a tool without one (its calls never ask). */
  readonly approval: ApprovalRule | undefined;
  readonly approvalTtlSeconds: number;
  readonly approvalWaitMs: number;
}

const never = () => false;

/** Checks a tool definition and resolves its defaults against the ledger's, frozen. */
export function resolveToolConfig(
  definition: ToolOptions<StandardSchemaV1 | undefined, unknown>,
  ledger: ResolvedConfig,
): ResolvedToolConfig {
  if (definition === null || typeof definition !== 'object')
    throw invalid('ledger.tool() needs an options object.');
  if (typeof definition.name !== 'string' || !TOOL_NAME.test(definition.name)) {
    throw invalid(
      `Tool name ${JSON.stringify(definition?.name)} is invalid: use 1-128 letters, digits and _ . - : / (for example "create_invoice").`,
    );
  }
  const name = definition.name;
  checkKnown(`Tool "${name}"`, definition, TOOL_OPTION_NAMES);
  if (!KINDS.includes(definition.kind)) {
    throw invalid(
      `Tool "${name}" has kind ${JSON.stringify(definition.kind)}; use 'read', 'mutation' or 'job'.`,
    );
  }
  if (typeof definition.handler !== 'function') throw invalid(`Tool "${name}" needs a handler function.`);
  if (definition.input !== undefined && typeof definition.input?.['~standard']?.validate !== 'function') {
    throw invalid(`Tool "${name}": input must be a Standard Schema validator (zod 4, valibot, arktype).`);
  }
  if (definition.transactional && definition.kind !== 'mutation') {
    throw invalid(`Tool "${name}": transactional is only supported for kind 'mutation'.`);
  }
  const onUnknown = definition.onUnknown ?? 'rerun';
  if (onUnknown !== 'rerun' && onUnknown !== 'fail' && typeof onUnknown !== 'function') {
    throw invalid(
      `Tool "${name}" has onUnknown ${JSON.stringify(onUnknown)}; use 'rerun', 'fail' or a function that looks the outcome up.`,
    );
  }
  if (definition.onUnknown !== undefined && definition.kind === 'read') {
    throw invalid(`Tool "${name}": onUnknown is for mutations and jobs; a read tool has no outcome to lose.`);
  }
  const approval = checkApproval(name, definition);
  return Object.freeze({
    name,
    kind: definition.kind,
    description: definition.description,
    title: definition.title,
    destructive: definition.destructive ?? false,
    input: definition.input,
    handler: definition.handler as ResolvedToolConfig['handler'],
    leaseSeconds: checkSeconds(`${name}.leaseSeconds`, definition.leaseSeconds, ledger.leaseSeconds, 0.05),
    waitMs: checkSeconds(`${name}.waitSeconds`, definition.waitSeconds, ledger.waitSeconds, 0) * 1000,
    ttlSeconds: checkSeconds(
      `${name}.ttlSeconds`,
      definition.ttlSeconds,
      ledger.ttlSeconds,
      0,
      MAX_TTL_SECONDS,
    ),
    volatileFields: Object.freeze([...(definition.volatileFields ?? [])]),
    transactional: definition.transactional === true,
    isFinalError: definition.isFinalError ?? never,
    allowLeaseTakeover: definition.kind !== 'job' || definition.resumeAbandoned !== false,
    onUnknown,
    approval,
    approvalTtlSeconds: checkSeconds(
      `${name}.approvalTtlSeconds`,
      definition.approvalTtlSeconds,
      ledger.approvalTtlSeconds,
      1,
      MAX_TTL_SECONDS,
    ),
    approvalWaitMs:
      checkSeconds(
        `${name}.approvalWaitSeconds`,
        definition.approvalWaitSeconds,
        ledger.approvalWaitSeconds,
        0,
      ) * 1000,
  });
}

/** The `approval` option: `'required'` or a function, on a mutation or a job. */
function checkApproval(
  name: string,
  definition: ToolOptions<StandardSchemaV1 | undefined, unknown>,
): ApprovalRule | undefined {
  const approval = definition.approval as unknown;
  if (approval === undefined) return undefined;
  if (approval !== 'required' && typeof approval !== 'function') {
    throw invalid(
      `Tool "${name}" has approval ${JSON.stringify(approval)}; use 'required' or a function (input, ctx) => boolean that says whether this call needs a person's approval.`,
    );
  }
  if (definition.kind === 'read') {
    throw invalid(
      `Tool "${name}": approval is for kinds 'mutation' and 'job' (a read changes nothing to approve); remove approval, or make the tool a mutation.`,
    );
  }
  return approval as ApprovalRule;
}
