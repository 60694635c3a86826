import type { SpanRef } from '../contract/observer.js';

/** Facts gathered while a call proceeds, turned into its decision at the end. */
export interface CallFacts {
  attempt?: number;
  waitedMs?: number;
  executionSeconds?: number;
  jobId?: string;
  original?: SpanRef;
  /**
   * The tool's own answer is an error: its handler threw in this call, or the call replays a stored final failure.
   * Not set when the ledger, not the tool, failed.
   */
  toolError?: boolean;
}
