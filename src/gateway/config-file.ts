import { readFileSync } from 'node:fs';
import { ToolLedgerError } from '../contract/errors.js';
import { isRecord } from '../integrations/shared/adapter-tool.js';
import { type AccessRules, checkAccessRules } from './access.js';
import { checkTenantLimits, type TenantLimits } from './tenant-limits.js';
import type { GatewayToolOptions } from './types.js';

/**
 * The `--config` file: per-tool settings, defaults for the rest, the key argument's name, access rules and
 * per-tenant limits.
 */
export interface GatewayConfigFile {
  readonly tools?: Record<string, GatewayToolOptions>;
  readonly defaults?: GatewayToolOptions;
  readonly keyField?: string;
  readonly access?: AccessRules;
  readonly limits?: TenantLimits;
}

const TOP_LEVEL = ['tools', 'defaults', 'keyField', 'access', 'limits'];

const TOOL_FIELDS = new Set([
  'kind',
  'volatileFields',
  'ttlSeconds',
  'leaseSeconds',
  'waitSeconds',
  'onUnknown',
  'timeoutSeconds',
  'approval',
]);

function checkToolEntry(where: string, entry: unknown): GatewayToolOptions {
  if (!isRecord(entry)) throw invalid(`${where} must be an object`);
  for (const field of Object.keys(entry)) {
    if (!TOOL_FIELDS.has(field)) {
      throw invalid(`${where} has an unknown setting "${field}" (known: ${[...TOOL_FIELDS].join(', ')})`);
    }
  }
  const vf = entry.volatileFields;
  if (vf !== undefined && !(Array.isArray(vf) && vf.every((f) => typeof f === 'string'))) {
    throw invalid(`${where}.volatileFields must be an array of dotted argument paths`);
  }
  for (const field of ['ttlSeconds', 'leaseSeconds', 'waitSeconds'] as const) {
    const value = entry[field];
    if (value !== undefined && !(Number.isInteger(value) && (value as number) >= 0)) {
      throw invalid(`${where}.${field} must be an integer >= 0`);
    }
  }
  if (entry.approval !== undefined && entry.approval !== 'required') {
    throw invalid(`${where}.approval must be "required" (or left out)`);
  }
  if (entry.approval !== undefined && entry.kind === 'read') {
    throw invalid(`${where} has kind "read" and an approval: only a mutation can wait for one`);
  }
  return entry as GatewayToolOptions;
}

function invalid(why: string): ToolLedgerError {
  return new ToolLedgerError('CONFIG_INVALID', `The gateway config file is invalid: ${why}.`);
}

/** Reads and checks a `--config` JSON file. */
export function readGatewayConfig(path: string): GatewayConfigFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ToolLedgerError(
      'CONFIG_INVALID',
      `The gateway config file ${path} could not be read as JSON: ${(error as Error).message}.`,
      { cause: error },
    );
  }
  if (!isRecord(parsed)) throw invalid(`the top level must be an object with ${TOP_LEVEL.join(', ')}`);
  for (const field of Object.keys(parsed)) {
    if (![...TOP_LEVEL, '$schema'].includes(field)) {
      throw invalid(`unknown top-level field "${field}" (known: ${TOP_LEVEL.join(', ')})`);
    }
  }
  const tools: Record<string, GatewayToolOptions> = {};
  if (parsed.tools !== undefined) {
    if (!isRecord(parsed.tools)) throw invalid('"tools" must map tool names to settings');
    for (const [name, entry] of Object.entries(parsed.tools))
      tools[name] = checkToolEntry(`tools.${name}`, entry);
  }
  if (parsed.keyField !== undefined && typeof parsed.keyField !== 'string') {
    throw invalid('"keyField" must be a string');
  }
  return {
    tools,
    ...(parsed.defaults === undefined ? {} : { defaults: checkToolEntry('defaults', parsed.defaults) }),
    ...(parsed.keyField === undefined ? {} : { keyField: parsed.keyField as string }),
    ...(parsed.access === undefined ? {} : { access: checkAccessRules(parsed.access, invalid) }),
    ...(parsed.limits === undefined ? {} : { limits: checkTenantLimits(parsed.limits, invalid) }),
  };
}
