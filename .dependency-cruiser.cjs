// Which folder of src/ may import which (npm run depcheck; CI runs it next to lint). src/README.md draws the same
// floors. Each room's rule lists what it may import; anything else in src/ is an arrow pointing the wrong way.
//
//   cli                                    on top: every room, the gateway, console and otel only through their entries
//   console                                the web console over support/ and auth/
//   support                                what the CLI and the console read and decide: search, run view, audit
//   gateway, integrations                  adapters over the public API: never the ledger (nor its SQL)
//   create-ledger.ts, index.ts             the composition root and the root entry
//   middleware                             the pipeline: validate, claim, run, complete, report
//   config                                 options and their defaults, resolved once
//   ledger | telemetry                     side by side, never each other: the ledger knows no OpenTelemetry,
//                                          telemetry knows no SQL
//   auth                                   bearer-token (JWT, JWKS) verification for the gateway and the console
//   contract                               the ground: imports no other room
//   otel                                   the opt-in SDK bootstrap, apart: only the CLI starts it
//
// A new folder of src/ fails the check (unknown-room) until it gets a rule of its own here, and a line in
// src/README.md. .dependency-cruiser-known-violations.json lists the violations on record that are still to be fixed
// (npx depcruise-baseline src --config .dependency-cruiser.cjs rewrites it); anything new fails.

/** Every file of src/ outside the given rooms (paths relative to src/, as regular expression fragments). */
const outside = (...rooms) => ({ path: '^src/', pathNot: `^src/(${rooms.join('|')})` });

const room = (name, comment, from, ...allowed) => ({
  name,
  comment,
  severity: 'error',
  from: { path: from },
  to: outside(...allowed),
});

/** The CLI reaches a room only through that room's public entry, its index.ts. */
const throughEntry = (name, comment, room) => ({
  name,
  comment,
  severity: 'error',
  from: { path: '^src/cli/' },
  to: { path: `^src/${room}/`, pathNot: `^src/${room}/index[.]ts$` },
});

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import circle between files: a circle has no floor to read it from.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    room(
      'layer-contract',
      'contract/ holds the types, outcomes, errors, keys and fingerprint every room shares; it imports no other room.',
      '^src/contract/',
      'contract/',
    ),
    room(
      'layer-auth',
      'auth/ verifies bearer tokens (JWT by secret, PEM key or JWKS) for the gateway and the console: node:crypto only.',
      '^src/auth/',
      'auth/',
      'contract/',
    ),
    room(
      'layer-ledger',
      'ledger/ (store, SQL, drivers, migrations, purge) stands on contract/ alone: it knows no telemetry.',
      '^src/ledger/',
      'ledger/',
      'contract/',
    ),
    room(
      'layer-telemetry',
      'telemetry/ (names, spans, logs, metrics, scrubbing) stands on contract/ alone: it knows no SQL.',
      '^src/telemetry/',
      'telemetry/',
      'contract/',
    ),
    room(
      'layer-config',
      'config/ checks options against what the ledger and telemetry accept, and resolves their defaults.',
      '^src/config/',
      'config/',
      'contract/',
      'ledger/',
      'telemetry/',
    ),
    room(
      'layer-middleware',
      'middleware/ is the pipeline over the ledger; it reports through the observer interface of contract/.',
      '^src/middleware/',
      'middleware/',
      'contract/',
      'config/',
      'ledger/',
      'telemetry/',
    ),
    room(
      'layer-create-ledger',
      'create-ledger.ts puts the ledger, telemetry and the middleware together.',
      '^src/create-ledger[.]ts$',
      'contract/',
      'config/',
      'ledger/',
      'telemetry/',
      'middleware/',
    ),
    room(
      'layer-root-entry',
      'index.ts, the public API: adapters, the gateway and the OpenTelemetry bootstrap have entries of their own.',
      '^src/index[.]ts$',
      'contract/',
      'config/',
      'ledger/',
      'telemetry/',
      'middleware/',
      'create-ledger[.]ts$',
    ),
    room(
      'layer-integrations',
      'integrations/ adapt SDKs to the public API: never the ledger or its SQL, never the gateway, the CLI or otel.',
      '^src/integrations/',
      'integrations/',
      'contract/',
      'config/',
      'telemetry/',
      'middleware/',
      'create-ledger[.]ts$',
    ),
    room(
      'layer-gateway',
      'gateway/ is an adapter over the public API and the MCP integration: never the ledger or its SQL, never the CLI.',
      '^src/gateway/',
      'gateway/',
      'auth/',
      'contract/',
      'config/',
      'telemetry/',
      'middleware/',
      'integrations/',
      'create-ledger[.]ts$',
    ),
    room(
      'layer-support',
      'support/ is what people read and decide (the CLI and the console share it): statements of its own, the run view, scrubbing, resolve and forget.',
      '^src/support/',
      'support/',
      'contract/',
      'config/',
      'ledger/',
      'telemetry/',
    ),
    room(
      'layer-console',
      'console/ serves the web console over support/ and auth/, and decides approvals through the public ledger API; the CLI starts it through its entry.',
      '^src/console/',
      'console/',
      'support/',
      'auth/',
      'contract/',
      'ledger/',
      'create-ledger[.]ts$',
    ),
    room(
      'layer-otel',
      'otel/ bootstraps the OpenTelemetry SDK over telemetry/ names; no library room imports it.',
      '^src/otel/',
      'otel/',
      'contract/',
      'telemetry/',
    ),
    {
      name: 'unknown-room',
      comment: 'Every file of src/ lives in a room with a rule above; a new folder gets its rule with it.',
      severity: 'error',
      from: {
        path: '^src/',
        pathNot:
          '^src/(contract|auth|ledger|telemetry|config|middleware|integrations|gateway|otel|support|console|cli)/|^src/(create-ledger|index)[.]ts$',
      },
      to: { path: '^src/' },
    },
    throughEntry(
      'gateway-through-its-entry',
      'The CLI runs the gateway through its public entry (tool-ledger/gateway), never its internals.',
      'gateway',
    ),
    throughEntry(
      'console-through-its-entry',
      'The CLI starts the console through its public entry (tool-ledger/console), never its internals.',
      'console',
    ),
    {
      name: 'otel-through-its-entry',
      comment: 'Only the CLI starts the SDK, through its public entry (tool-ledger/otel).',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(otel|cli)/' },
      to: { path: '^src/otel/' },
    },
    throughEntry(
      'cli-otel-through-its-entry',
      'The CLI starts the SDK through its public entry (tool-ledger/otel), never its internals.',
      'otel',
    ),
    {
      name: 'ledger-knows-no-opentelemetry',
      comment: 'The ledger reports through contract/ interfaces; OpenTelemetry belongs to telemetry/.',
      severity: 'error',
      from: { path: '^src/ledger/' },
      to: { path: '@opentelemetry/' },
    },
    {
      name: 'telemetry-knows-no-sql-driver',
      comment: 'Telemetry never runs SQL: no database driver.',
      severity: 'error',
      from: { path: '^src/telemetry/' },
      to: { path: '(^|/)node_modules/(pg|pg-[^/]+|@electric-sql/pglite)/' },
    },
    {
      name: 'sdk-only-in-otel',
      comment:
        'The library uses @opentelemetry/api (and api-logs, instrumentation) only; SDKs and exporters are otel/.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/otel/' },
      to: { path: '(^|/)node_modules/@opentelemetry/(sdk-|exporter-|resources)' },
    },
  ],
  options: {
    // Type-only imports are arrows too: a type from a higher room ties this one to it.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
  },
};
