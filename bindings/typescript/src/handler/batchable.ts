/**
 * Batch handlers: an analyzer planning cursor ranges, workers processing one range each, and a
 * convergence step aggregating their results.
 */
import {
  aggregateBatchResults,
  createBatches,
  cursorConfigs,
  noBatches,
  type BatchCursor,
} from '../types/batch';
import type { JsonObject } from '../types/json';
import type { StepContext } from '../types/step-context';
import type { StepHandlerResult } from '../types/step-handler-result';
import { StepHandler } from './base';

/** Base class of batch analyzers, workers and aggregators (helpers only; `call` is yours). */
export abstract class BatchableHandler extends StepHandler {
  /** Cursor ranges over `totalItems` (see {@link cursorConfigs}). */
  protected createCursorConfigs(totalItems: number, batchSize: number, maxWorkers?: number): BatchCursor[] {
    return cursorConfigs(totalItems, batchSize, maxWorkers);
  }

  /** The analyzer's result: one `workerTemplate` step per config (none: no_batches). */
  protected batchSuccess(workerTemplate: string, configs: BatchCursor[], totalItems: number, extra?: JsonObject): StepHandlerResult {
    return createBatches(workerTemplate, configs, totalItems, extra);
  }

  /** The analyzer's result when there is nothing to process. */
  protected noBatchesResult(reason = 'empty_dataset', extra?: JsonObject): StepHandlerResult {
    return noBatches(reason, extra);
  }

  /** The worker's cursor, or null (also for the no-op worker of an empty batch). */
  protected batchCursor(context: StepContext): BatchCursor | null {
    return context.isNoOpBatch ? null : context.batchCursor;
  }

  /** The results of the workers (parents named `<prefix>...`), by name. */
  protected batchWorkerResults(context: StepContext, prefix: string): unknown[] {
    return context.getAllDependencyResults(prefix);
  }

  /** Sums numeric `fields` over the workers' results. */
  protected aggregate(context: StepContext, prefix: string, fields: string[]): Record<string, number> {
    return aggregateBatchResults(this.batchWorkerResults(context, prefix), fields);
  }
}
