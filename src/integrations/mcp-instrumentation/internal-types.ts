// Structural views of the MCP SDK's classes: this module patches the SDK, so it must never import it.

export type ToolCallbackLike = (...args: unknown[]) => unknown;

export interface RegisteredToolLike {
  handler?: unknown;
  update: (updates: Record<string, unknown>) => unknown;
}

export interface McpServerLike {
  registerTool: (name: string, config: unknown, callback: ToolCallbackLike) => RegisteredToolLike;
  tool: (name: string, ...rest: unknown[]) => RegisteredToolLike;
}
