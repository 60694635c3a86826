import type { LedgerOptions } from '../../../src/index.js';

/** What the step worker (test/faults/fixtures/step-worker.ts) is told, as JSON in its one argument. */
export interface StepWorkerConfig {
  readonly role: 'victim' | 'callers';
  readonly url: string;
  readonly schema: string;
  /** The loopback provider's base URL. */
  readonly provider: string;
  readonly options: LedgerOptions;
  /** `hold` names the phase a victim stops at; callers send it too, so the parameter hash is the same. */
  readonly keys: readonly { tenant: string; key: string; hold?: string }[];
  /** Callers: concurrent callers in this process. */
  readonly lanes?: number;
  /** Callers: how many callers of this process take each key. */
  readonly callersPerKey?: number;
  /** Callers: no new key is picked after this many seconds. */
  readonly loadSeconds?: number;
  /** Every caller gives up by then; the process exits 15 s later whatever happens. */
  readonly deadlineSeconds: number;
  /** Wait for a line on stdin before calling, so several workers start together. */
  readonly waitForGo?: boolean;
}

/** One line a step worker prints. */
export type WorkerLine =
  | { type: 'ready' }
  | { type: 'crash'; message: string }
  | { type: 'hold'; tenant: string; key: string; phase: string }
  | { type: 'start'; tenant: string; key: string; lane: number }
  /** The handler began or returned (its value in hand, not yet saved) in this process, in that attempt. */
  | { type: 'handler'; tenant: string; key: string; event: 'start' | 'end'; attempt: number }
  /** A step's function began (`ran`) or resolved (`done`) in this process, in that attempt of the run. */
  | { type: 'step'; tenant: string; key: string; step: string; event: 'ran' | 'done'; attempt: number }
  | { type: 'retry'; tenant: string; key: string; lane: number; code: string; message: string; ms: number }
  | {
      type: 'answer';
      tenant: string;
      key: string;
      lane: number;
      ok: true;
      value: Record<string, string>;
      ms: number;
    }
  | {
      type: 'answer';
      tenant: string;
      key: string;
      lane: number;
      ok: false;
      typed: boolean;
      code: string;
      message: string;
      ms: number;
    };

export type AnswerLine = Extract<WorkerLine, { type: 'answer' }>;
