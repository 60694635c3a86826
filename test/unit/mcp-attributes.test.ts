import { describe, expect, it } from 'vitest';
import { mcpCallAttributes } from '../../src/integrations/mcp/attributes.js';

describe('MCP call attributes (semantic conventions for MCP)', () => {
  it('name the method, request, session, protocol revision and transport the adapter saw', () => {
    expect(
      mcpCallAttributes({ sessionId: 's-1', requestId: 7, protocolVersion: '2025-11-25', transport: 'tcp' }),
    ).toEqual({
      'mcp.method.name': 'tools/call',
      'mcp.session.id': 's-1',
      'jsonrpc.request.id': '7',
      'mcp.protocol.version': '2025-11-25',
      'network.transport': 'tcp',
    });
  });

  it('leave mcp.session.id out for a peer on 2026-07-28 or later, which has no protocol sessions', () => {
    for (const protocolVersion of ['2026-07-28', '2027-01-01']) {
      expect(mcpCallAttributes({ sessionId: 's-1', requestId: 7, protocolVersion })).toEqual({
        'mcp.method.name': 'tools/call',
        'jsonrpc.request.id': '7',
        'mcp.protocol.version': protocolVersion,
      });
    }
    // A revision not told is an older peer's (the 2026-07-28 envelope always names it).
    expect(mcpCallAttributes({ sessionId: 's-1' })).toMatchObject({ 'mcp.session.id': 's-1' });
  });

  it('leave out what the transport did not deliver', () => {
    expect(mcpCallAttributes(undefined)).toEqual({ 'mcp.method.name': 'tools/call' });
    expect(mcpCallAttributes({ requestId: 0, transport: 'pipe' })).toEqual({
      'mcp.method.name': 'tools/call',
      'jsonrpc.request.id': '0',
      'network.transport': 'pipe',
    });
  });
});
