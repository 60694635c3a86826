import { createRequire } from 'node:module';

/** The Node warning code, so an app that registers the hook another way can silence it with `--disable-warning`. */
export const NO_LOADER_HOOK_WARNING = 'TOOL_LEDGER_MCP_NO_LOADER_HOOK';

const LOADER_FLAG = /(?:^|\s)--(?:import|loader|experimental-loader)(?:[=\s]|$)/;
let warned = false;

/**
 * ES module imports of the MCP SDK are patched only through OpenTelemetry's loader hook, which has to be registered
 * before the app's own imports; without it this instrumentation records nothing, and nothing says so. An ES module
 * entry point started without a loader flag (`--import`, `--loader`) is how that happens, so say it once, on the
 * process's warning channel (stderr by default), not only through the OpenTelemetry diag logger that is usually
 * off. A CommonJS entry needs no hook: the require hook covers it.
 */
export function warnIfNoLoaderHook(): void {
  if (warned) return;
  const esModuleEntry = createRequire(import.meta.url).main === undefined;
  const flags = [...process.execArgv, process.env.NODE_OPTIONS ?? ''].join(' ');
  if (!esModuleEntry || LOADER_FLAG.test(flags)) return;
  warned = true;
  process.emitWarning(
    'ToolLedgerMcpInstrumentation is enabled in an ES module process started without a loader hook, so ES module ' +
      "imports of the MCP SDK are not patched and no tool call is traced. Register OpenTelemetry's hook first, in " +
      "a file loaded with `node --import`: module.register('@opentelemetry/instrumentation/hook.mjs', " +
      `import.meta.url). If the hook is registered another way, silence this with --disable-warning=${NO_LOADER_HOOK_WARNING}.`,
    { code: NO_LOADER_HOOK_WARNING },
  );
}
