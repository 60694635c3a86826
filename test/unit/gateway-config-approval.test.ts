import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveGatewaySettings } from '../../src/config/gateway.js';
import { ToolCatalog } from '../../src/gateway/catalog.js';
import { readGatewayConfig } from '../../src/gateway/config-file.js';
import { supportsFormElicitation } from '../../src/integrations/mcp/approval.js';

function configFile(content: unknown): string {
  const file = join(mkdtempSync(join(tmpdir(), 'tl-gw-conf-')), 'gateway.json');
  writeFileSync(file, JSON.stringify(content));
  return file;
}

describe('the gateway config file: a per-tool approval', () => {
  it('takes approval: "required" for a tool and in the defaults', () => {
    const config = readGatewayConfig(
      configFile({ tools: { refund: { approval: 'required' } }, defaults: { approval: 'required' } }),
    );
    expect(config.tools?.refund).toEqual({ approval: 'required' });
    expect(config.defaults).toEqual({ approval: 'required' });
  });

  it('refuses any other value, and an approval on a read tool, with CONFIG_INVALID saying what to write', () => {
    expect(() => readGatewayConfig(configFile({ tools: { refund: { approval: true } } }))).toThrow(
      expect.objectContaining({
        code: 'CONFIG_INVALID',
        message: expect.stringMatching(/tools\.refund\.approval must be "required"/),
      }),
    );
    expect(() =>
      readGatewayConfig(configFile({ tools: { search: { kind: 'read', approval: 'required' } } })),
    ).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID', message: expect.stringMatching(/only a mutation/) }),
    );
  });

  it('sends a tool with an approval through the ledger even when the server annotates it read-only', () => {
    const catalog = new ToolCatalog({
      keyField: 'idempotency_key',
      tools: { export_all: { approval: 'required' } },
      defaults: {},
      log: () => {},
    });
    catalog.learn({
      name: 'export_all',
      annotations: { readOnlyHint: true },
      inputSchema: { type: 'object' },
    });
    catalog.learn({ name: 'lookup', annotations: { readOnlyHint: true }, inputSchema: { type: 'object' } });
    expect(catalog.get('export_all')?.kind).toBe('mutation');
    expect(catalog.get('lookup')?.kind).toBe('read');
  });
});

describe('the approval form timeout of the gateway', () => {
  it('defaults to 10 minutes, and refuses 0', () => {
    expect(resolveGatewaySettings().approvalFormTimeoutMs).toBe(600_000);
    expect(() => resolveGatewaySettings({ approvalFormTimeoutMs: 0 })).toThrow(
      /approvalFormTimeoutMs must be/,
    );
  });
});

describe('form elicitation as a client declares it', () => {
  it('is supported with elicitation.form, or an empty elicitation (the older form), not with url only', () => {
    expect(supportsFormElicitation({ elicitation: { form: {} } })).toBe(true);
    expect(supportsFormElicitation({ elicitation: {} })).toBe(true);
    expect(supportsFormElicitation({ elicitation: { url: {} } })).toBe(false);
    expect(supportsFormElicitation({})).toBe(false);
    expect(supportsFormElicitation(undefined)).toBe(false);
  });
});
