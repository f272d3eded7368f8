/**
 * Batch processing shapes (the Swift model's `BatchProcessingOutcome` and `CursorConfig`, as the
 * Python SDK produces them): an analyzer returns `batch_processing_outcome`, each worker reads its
 * `batch_cursor`, a convergence step aggregates.
 */
import type { JsonObject } from './json';
import { StepHandlerResult } from './step-handler-result';

/** One worker's range: items `start_cursor` (inclusive) to `end_cursor` (exclusive). */
export interface BatchCursor {
  batch_id: string;
  start_cursor: number;
  end_cursor: number;
  batch_size: number;
}

/** `batch_processing_outcome` of a batchable step's result. */
export type BatchProcessingOutcome =
  | { type: 'no_batches' }
  | {
      type: 'create_batches';
      worker_template_name: string;
      worker_count: number;
      cursor_configs: BatchCursor[];
      total_items: number;
    };

/**
 * Cursor ranges covering `[0, totalItems)`: batches of `batchSize`, widened so that there are at
 * most `maxWorkers`; ids "001", "002", ...
 * @throws RangeError for a batchSize that is not a positive integer.
 */
export function cursorConfigs(totalItems: number, batchSize: number, maxWorkers?: number | null): BatchCursor[] {
  if (!Number.isInteger(totalItems) || totalItems <= 0) return [];
  if (!Number.isInteger(batchSize) || batchSize <= 0) {
    throw new RangeError(`batchSize must be a positive integer, got ${String(batchSize)}`);
  }
  let size = batchSize;
  let count = Math.ceil(totalItems / size);
  if (maxWorkers !== undefined && maxWorkers !== null && maxWorkers > 0 && count > maxWorkers) {
    size = Math.ceil(totalItems / maxWorkers);
    count = Math.ceil(totalItems / size);
  }
  const configs: BatchCursor[] = [];
  for (let index = 0; index < count; index++) {
    const start = index * size;
    const end = Math.min(totalItems, start + size);
    configs.push({ batch_id: String(index + 1).padStart(3, '0'), start_cursor: start, end_cursor: end, batch_size: end - start });
  }
  return configs;
}

/** A batchable step's result with no workers (one no-op worker runs). */
export function noBatches(reason = 'empty_dataset', extra: JsonObject = {}): StepHandlerResult {
  return StepHandlerResult.success({ ...extra, batch_processing_outcome: { type: 'no_batches' }, reason });
}

/**
 * A batchable step's result: one `workerTemplate` step per cursor config. No configs is
 * {@link noBatches}.
 */
export function createBatches(
  workerTemplate: string,
  configs: BatchCursor[],
  totalItems: number,
  extra: JsonObject = {}
): StepHandlerResult {
  if (configs.length === 0) return noBatches('empty_dataset', extra);
  const outcome: BatchProcessingOutcome = {
    type: 'create_batches',
    worker_template_name: workerTemplate,
    worker_count: configs.length,
    cursor_configs: configs,
    total_items: totalItems,
  };
  return StepHandlerResult.success({
    ...extra,
    batch_processing_outcome: outcome,
    worker_count: configs.length,
    total_items: totalItems,
    worker_template: workerTemplate,
  });
}

/** Sums the numeric fields `fields` over the batch workers' results (`{field: total, ...}`). */
export function aggregateBatchResults(results: unknown[], fields: string[]): Record<string, number> {
  const totals: Record<string, number> = {};
  for (const field of fields) totals[field] = 0;
  for (const result of results) {
    if (typeof result !== 'object' || result === null) continue;
    for (const field of fields) {
      const value = (result as JsonObject)[field];
      if (typeof value === 'number' && Number.isFinite(value)) totals[field] = (totals[field] ?? 0) + value;
    }
  }
  return totals;
}
