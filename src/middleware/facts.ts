import type { SpanRef } from '../contract/observer.js';

/** Facts gathered while a call proceeds, turned into its decision at the end. */
export interface CallFacts {
  attempt?: number;
  waitedMs?: number;
  executionSeconds?: number;
  jobId?: string;
  original?: SpanRef;
}
