// Public API of `tool-ledger/gateway`. Every export here is public and follows semver. Needs the optional peer
// `@modelcontextprotocol/sdk` (1.x), whose transports the gateway relays over.

export type { TokenVerification } from '../auth/jwt.js';
export { type GatewayConfigFile, readGatewayConfig } from './config-file.js';
export type { HttpIdentityOptions } from './http.js';
export { type RunningGateway, type StartGatewayOptions, startGateway } from './start.js';
export type {
  CommandUpstream,
  GatewayIdentity,
  GatewayOptions,
  GatewayToolOptions,
  GatewayTransport,
  JsonRpcMessage,
  TransportExtra,
  UrlUpstream,
} from './types.js';
