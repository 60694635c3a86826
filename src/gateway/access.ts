import { ToolLedgerError } from '../contract/errors.js';
import { isRecord } from '../integrations/shared/adapter-tool.js';

/**
 * Who may call a tool: each list given must match (a role of the caller's in `roles`, AND a group in `groups`,
 * AND the tenant in `tenants`); a list left out allows everyone. Matches are exact and case-sensitive.
 */
export interface AccessRule {
  readonly roles?: readonly string[];
  readonly groups?: readonly string[];
  readonly tenants?: readonly string[];
}

/** The `access` section of the gateway's config file. */
export interface AccessRules {
  /** Rules by tool name. @default {} */
  readonly tools?: Readonly<Record<string, AccessRule>>;
  /** The rule of every tool not named in `tools`. @default undefined (every caller may call them) */
  readonly defaults?: AccessRule;
  /**
   * The verified token claims that carry the caller's roles and groups (a string of names separated by spaces or
   * commas, or an array of strings). The tenant is the call's tenant, wherever it came from.
   * @default { roles: 'roles', groups: 'groups' }
   */
  readonly claims?: { readonly roles?: string; readonly groups?: string };
}

/**
 * Why a call was refused by the rules: a list the caller matched nothing in (`role`, `group`, `tenant`), or a claim
 * the rule needs that the caller's identity lacks (`missing_role`, ...). These are the `reason` values of the
 * decision metric and span attribute.
 */
export type AccessRefusal = 'role' | 'group' | 'tenant' | 'missing_role' | 'missing_group' | 'missing_tenant';

const LISTS = [
  ['roles', 'role'],
  ['groups', 'group'],
  ['tenants', 'tenant'],
] as const;

/** The names a claim carries: a string (space- or comma-separated), or an array of strings. */
export function claimNames(value: unknown): readonly string[] | undefined {
  if (typeof value === 'string') return value.split(/[\s,]+/).filter(Boolean);
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value as string[];
  return undefined;
}

/** Checks the `access` section of a config file. */
export function checkAccessRules(value: unknown, invalid: (why: string) => Error): AccessRules {
  if (!isRecord(value)) throw invalid('"access" must be an object with "tools", "defaults" and/or "claims"');
  for (const field of Object.keys(value)) {
    if (!['tools', 'defaults', 'claims'].includes(field)) {
      throw invalid(`access has an unknown field "${field}" (known: tools, defaults, claims)`);
    }
  }
  const rule = (where: string, entry: unknown): AccessRule => {
    if (!isRecord(entry)) throw invalid(`${where} must be an object with "roles", "groups" and/or "tenants"`);
    for (const [field, list] of Object.entries(entry)) {
      if (!LISTS.some(([name]) => name === field)) {
        throw invalid(`${where} has an unknown field "${field}" (known: roles, groups, tenants)`);
      }
      if (!Array.isArray(list) || !list.every((v) => typeof v === 'string' && v.length > 0)) {
        throw invalid(`${where}.${field} must be an array of names (an empty array allows nobody)`);
      }
    }
    return entry as AccessRule;
  };
  const tools: Record<string, AccessRule> = {};
  if (value.tools !== undefined) {
    if (!isRecord(value.tools)) throw invalid('access.tools must map tool names to rules');
    for (const [name, entry] of Object.entries(value.tools))
      tools[name] = rule(`access.tools.${name}`, entry);
  }
  if (value.claims !== undefined) {
    const claims = value.claims;
    if (
      !isRecord(claims) ||
      Object.entries(claims).some(([k, v]) => !['roles', 'groups'].includes(k) || typeof v !== 'string')
    ) {
      throw invalid('access.claims must be { "roles": "<claim name>", "groups": "<claim name>" }');
    }
  }
  return {
    tools,
    ...(value.defaults === undefined ? {} : { defaults: rule('access.defaults', value.defaults) }),
    ...(value.claims === undefined ? {} : { claims: value.claims as AccessRules['claims'] }),
  };
}

/** What the rules look at of a caller (the gateway's `GatewayIdentity`). */
export interface Caller {
  readonly tenant: string | undefined;
  readonly roles?: readonly string[] | undefined;
  readonly groups?: readonly string[] | undefined;
}

/** The caller's roles and groups from verified claims, by the claim names the rules name. */
export function rolesAndGroups(
  claims: Readonly<Record<string, unknown>> | undefined,
  rules: Pick<AccessRules, 'claims'> | undefined,
): Pick<Caller, 'roles' | 'groups'> {
  if (claims === undefined) return {};
  const roles = claimNames(claims[rules?.claims?.roles ?? 'roles']);
  const groups = claimNames(claims[rules?.claims?.groups ?? 'groups']);
  return { ...(roles ? { roles } : {}), ...(groups ? { groups } : {}) };
}

/** Whether the caller may call the tool: undefined when allowed, otherwise why not. */
export function refusal(
  rules: AccessRules | undefined,
  tool: string,
  identity: Caller,
): AccessRefusal | undefined {
  const rule = rules?.tools?.[tool] ?? rules?.defaults;
  if (rule === undefined) return undefined;
  for (const [list, kind] of LISTS) {
    const allowed = rule[list];
    if (allowed === undefined) continue;
    const held =
      kind === 'tenant' ? (identity.tenant === undefined ? undefined : [identity.tenant]) : identity[list];
    if (held === undefined) return `missing_${kind}`;
    if (!held.some((name) => allowed.includes(name))) return kind;
  }
  return undefined;
}

/** The error a refused call answers: a tool error the model reads (not retryable: the same caller stays refused). */
export function accessDenied(tool: string, why: AccessRefusal): ToolLedgerError {
  const missing = why.startsWith('missing_') ? why.slice('missing_'.length) : undefined;
  const text =
    missing !== undefined
      ? `${tool} may be called only by callers whose verified identity names their ${missing}, and this caller's does not.`
      : `${tool} may not be called by this caller: its ${why} is not among those allowed for this tool.`;
  return new ToolLedgerError('ACCESS_DENIED', text);
}
