import { createRequire } from 'node:module';
import { type MeterProvider, metrics, type TracerProvider, trace } from '@opentelemetry/api';
import type { LoggerProvider } from '@opentelemetry/api-logs';
import {
  InstrumentationBase,
  InstrumentationNodeModuleDefinition,
  InstrumentationNodeModuleFile,
  isWrapped,
} from '@opentelemetry/instrumentation';
import type { CallObserver } from '../../contract/observer.js';
import { loadLogsApi } from '../../telemetry/logs-api.js';
import { createOtelObserver } from '../../telemetry/observer.js';
import { mcpCallAttributes } from '../mcp/attributes.js';
import { requestInfo, withTransport } from '../mcp/request.js';
import { contextFromMeta, withCallAttributes } from '../shared/call-attributes.js';
import { isLedgerCallback } from '../shared/marker.js';
import type { McpServerLike, RegisteredToolLike, ToolCallbackLike } from './internal-types.js';
import { warnIfNoLoaderHook } from './loader-hook-check.js';
import { type CallTelemetry, observeCall } from './observe-call.js';
import { operationMetric } from './operation-metric.js';
import { serverSpanTracerProvider } from './server-span.js';
import { explicitProvider, stateOf } from './state.js';
import type { ToolLedgerMcpInstrumentationConfig } from './types.js';

const INSTRUMENTATION_NAME = 'tool-ledger/mcp-instrumentation';
const SUPPORTED_VERSIONS = ['>=1.10.0 <2'];
const SUPPORTED_V2_VERSIONS = ['>=2.0.0 <3'];
// The same relative path from src/ (tests) and dist/ (the package) reaches the package root.
const VERSION: string = createRequire(import.meta.url)('../../../package.json').version;

/** The original callback behind a wrapper, so `update()` and double registration never wrap twice. */
const ORIGINAL = Symbol.for('tool-ledger.mcp-instrumentation.original');

interface Wrapped extends ToolCallbackLike {
  [ORIGINAL]?: ToolCallbackLike;
}

/** Module ids the CommonJS hook watches (see `hookCommonJs`). */
const COMMONJS_IDS = [
  '@modelcontextprotocol/sdk/server/mcp.js',
  '@modelcontextprotocol/sdk/dist/cjs/server/mcp.js',
];

/**
 * OpenTelemetry instrumentation for MCP servers built on `McpServer` (`@modelcontextprotocol/sdk` 1.x or
 * `@modelcontextprotocol/server` 2.x). It patches tool registration, so every tool of an unmodified server
 * reports, per call, one MCP server span `tools/call {tool}` (or its attributes on the span another
 * instrumentation already opened for the request; see `adoptableSpan`), `mcp.server.operation.duration`, one
 * decision log record and the tool-ledger metrics. Telemetry only: no idempotency, no keys. Tools registered with
 * `registerMcpTool` already report through their ledger and are left alone.
 *
 * Register it before the MCP SDK is loaded: `registerInstrumentations({ instrumentations: [new
 * ToolLedgerMcpInstrumentation()] })` or NodeSDK's `instrumentations`. For ES modules, also register
 * OpenTelemetry's loader hook first: `module.register('@opentelemetry/instrumentation/hook.mjs', import.meta.url)`
 * in a file the app loads with `node --import`.
 */
export class ToolLedgerMcpInstrumentation extends InstrumentationBase<ToolLedgerMcpInstrumentationConfig> {
  // Prototype methods rather than #private ones: InstrumentationBase's constructor calls enable(), setConfig()
  // and the provider setters before a subclass's private members exist.
  constructor(config: ToolLedgerMcpInstrumentationConfig = {}) {
    super(INSTRUMENTATION_NAME, VERSION, config);
  }

  protected init(): InstrumentationNodeModuleDefinition[] {
    const patch = (exports: unknown) => {
      this.patchServer(exports);
      return exports;
    };
    const unpatch = (exports: unknown) => {
      this.unpatchServer(exports);
    };
    return [
      new InstrumentationNodeModuleDefinition(
        '@modelcontextprotocol/sdk',
        SUPPORTED_VERSIONS,
        undefined,
        undefined,
        [
          new InstrumentationNodeModuleFile(
            '@modelcontextprotocol/sdk/dist/cjs/server/mcp.js',
            SUPPORTED_VERSIONS,
            patch,
            unpatch,
          ),
          new InstrumentationNodeModuleFile(
            '@modelcontextprotocol/sdk/dist/esm/server/mcp.js',
            SUPPORTED_VERSIONS,
            patch,
            unpatch,
          ),
        ],
      ),
      // SDK 2.x has a real root entry that exports McpServer, so the root module is the one to patch.
      new InstrumentationNodeModuleDefinition(
        '@modelcontextprotocol/server',
        SUPPORTED_V2_VERSIONS,
        patch,
        unpatch,
      ),
    ];
  }

  override setConfig(config: ToolLedgerMcpInstrumentationConfig = {}): void {
    super.setConfig(config);
    stateOf(this).observer = undefined;
  }

  // Providers handed over by registerInstrumentations or NodeSDK win over the globals; without them the observer
  // looks the globals up per call, so an SDK started after this instrumentation is still picked up.
  override setTracerProvider(provider: TracerProvider): void {
    super.setTracerProvider(provider);
    const state = stateOf(this);
    state.tracerProvider = explicitProvider(provider, trace.getTracerProvider());
    state.observer = undefined;
  }

  override setMeterProvider(provider: MeterProvider): void {
    super.setMeterProvider(provider);
    const state = stateOf(this);
    state.meterProvider = explicitProvider(provider, metrics.getMeterProvider());
    state.observer = undefined;
  }

  override setLoggerProvider(provider: LoggerProvider): void {
    super.setLoggerProvider(provider);
    const state = stateOf(this);
    state.loggerProvider = explicitProvider(provider, loadLogsApi()?.logs.getLoggerProvider());
    state.observer = undefined;
  }

  override enable(): void {
    super.enable();
    const state = stateOf(this);
    state.commonJsHook ??= this.hookCommonJs();
    warnIfNoLoaderHook();
  }

  override disable(): void {
    super.disable();
    const state = stateOf(this);
    state.commonJsHook?.unhook();
    state.commonJsHook = undefined;
    for (const exports of state.patched) this.unpatchServer(exports);
  }

  /**
   * The SDK's CommonJS build has no root entry file (its "." export points at a file it does not ship), so
   * require-in-the-middle cannot tell its internal files apart and the file definitions in `init` never fire
   * under `require`. A hook of our own on the public subpath id fills that gap. require-in-the-middle is loaded
   * from @opentelemetry/instrumentation's own dependencies, so it is always the copy that package works with.
   */
  private hookCommonJs(): { unhook(): void } | undefined {
    try {
      const fromInstrumentation = createRequire(
        createRequire(import.meta.url).resolve('@opentelemetry/instrumentation'),
      );
      const { Hook } = fromInstrumentation('require-in-the-middle') as {
        Hook: new (
          modules: string[],
          options: { internals: boolean },
          onRequire: (exports: unknown) => unknown,
        ) => { unhook(): void };
      };
      return new Hook(COMMONJS_IDS, { internals: true }, (exports) => {
        if (this.isEnabled()) this.patchServer(exports);
        return exports;
      });
    } catch (error) {
      this._diag.warn(
        'could not hook CommonJS loads of the MCP SDK; ES module imports are still patched',
        error,
      );
      return undefined;
    }
  }

  private getObserver(): CallObserver {
    const state = stateOf(this);
    if (state.observer === undefined) {
      const { telemetry = {} } = this.getConfig();
      state.spans ??= serverSpanTracerProvider(() => state.tracerProvider ?? trace.getTracerProvider());
      state.observer = createOtelObserver({
        ...telemetry,
        tracerProvider: state.spans,
        ...(state.meterProvider ? { meterProvider: state.meterProvider } : {}),
        ...(state.loggerProvider ? { loggerProvider: state.loggerProvider } : {}),
      });
    }
    return state.observer;
  }

  /** What `observeCall` reports to, made once per instance. */
  private callTelemetry(): CallTelemetry {
    const state = stateOf(this);
    state.telemetry ??= {
      observer: () => this.getObserver(),
      metric: () => this.getMetric(),
      diag: this._diag,
    };
    return state.telemetry;
  }

  private getMetric(): ReturnType<typeof operationMetric> {
    const state = stateOf(this);
    state.metric ??= operationMetric(() => state.meterProvider);
    return state.metric;
  }

  private patchServer(exports: unknown): void {
    const proto = (exports as { McpServer?: { prototype?: McpServerLike } } | undefined)?.McpServer
      ?.prototype;
    if (!proto) {
      this._diag.debug('McpServer not found; nothing patched');
      return;
    }
    // The ESM and CommonJS hooks, or a second instrumentation instance, may reach the same class twice.
    if (isWrapped(proto.registerTool)) return;
    stateOf(this).patched.add(exports);
    const instrumentation = this;
    if (typeof proto.registerTool === 'function') {
      this._wrap(
        proto,
        'registerTool',
        (original) =>
          function registerTool(
            this: McpServerLike,
            name: string,
            config: unknown,
            callback: ToolCallbackLike,
          ) {
            const readOnly = (config as { annotations?: { readOnlyHint?: unknown } } | undefined)?.annotations
              ?.readOnlyHint;
            const registered = original.call(
              this,
              name,
              config,
              instrumentation.wrapToolCallback(this, name, readOnly === true, callback),
            );
            return instrumentation.patchRegisteredTool(this, registered, name, readOnly === true);
          },
      );
    }
    if (typeof proto.tool === 'function') {
      this._wrap(
        proto,
        'tool',
        (original) =>
          function tool(this: McpServerLike, name: string, ...rest: unknown[]) {
            const last = rest.length - 1;
            const readOnly = rest.some(
              (arg, i) =>
                i < last &&
                arg !== null &&
                typeof arg === 'object' &&
                (arg as { readOnlyHint?: unknown }).readOnlyHint === true,
            );
            if (last >= 0 && typeof rest[last] === 'function') {
              rest[last] = instrumentation.wrapToolCallback(
                this,
                name,
                readOnly,
                rest[last] as ToolCallbackLike,
              );
            }
            return instrumentation.patchRegisteredTool(
              this,
              original.call(this, name, ...rest),
              name,
              readOnly,
            );
          },
      );
    }
  }

  private unpatchServer(exports: unknown): void {
    const proto = (exports as { McpServer?: { prototype?: McpServerLike } } | undefined)?.McpServer
      ?.prototype;
    if (!proto) return;
    stateOf(this).patched.delete(exports);
    if (isWrapped(proto.registerTool)) this._unwrap(proto, 'registerTool');
    if (isWrapped(proto.tool)) this._unwrap(proto, 'tool');
  }

  /** Keeps `RegisteredTool.update({ callback, name })` instrumented. */
  private patchRegisteredTool(
    server: McpServerLike,
    registered: RegisteredToolLike,
    name: string,
    readOnly: boolean,
  ): RegisteredToolLike {
    if (!registered || typeof registered.update !== 'function') return registered;
    const update = registered.update;
    let currentName = name;
    const instrumentation = this;
    registered.update = function patchedUpdate(this: unknown, updates: Record<string, unknown>) {
      if (updates && typeof updates === 'object') {
        if (typeof updates.name === 'string') currentName = updates.name;
        const callback = (updates.callback ??
          (typeof updates.name === 'string' ? registered.handler : undefined)) as Wrapped | undefined;
        if (typeof callback === 'function') {
          updates = {
            ...updates,
            callback: instrumentation.wrapToolCallback(
              server,
              currentName,
              readOnly,
              callback[ORIGINAL] ?? callback,
            ),
          };
        }
      }
      return update.call(this, updates);
    };
    return registered;
  }

  private wrapToolCallback(
    server: McpServerLike,
    name: string,
    readOnly: boolean,
    callback: ToolCallbackLike,
  ): ToolCallbackLike {
    if (typeof callback !== 'function' || isLedgerCallback(callback)) return callback;
    const original = (callback as Wrapped)[ORIGINAL] ?? callback;
    const instrumentation = this;
    const wrapped: Wrapped = function instrumentedToolCallback(this: unknown, ...args: unknown[]) {
      if (!instrumentation.isEnabled()) return original.apply(this, args);
      // The SDK calls `(args, extra)` for tools with an input schema and `(extra)` for tools without one.
      const request = withTransport(requestInfo(args.at(-1)), server);
      const input = args.length > 1 ? args[0] : undefined;
      return withCallAttributes(
        mcpCallAttributes(request),
        () =>
          observeCall(instrumentation.callTelemetry(), name, readOnly, input, request, () =>
            original.apply(this, args),
          ),
        contextFromMeta(request._meta),
      );
    };
    wrapped[ORIGINAL] = original;
    return wrapped;
  }
}
