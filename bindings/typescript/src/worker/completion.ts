/**
 * Hands a handler's outcome to the worker exactly once: a checkpoint yield, or a completion. A
 * result that cannot be serialized, or that the worker refuses as invalid, is replaced by a
 * permanent failure saying why (so the step never waits out its timeout); a completion the worker
 * no longer accepts (the event timed out) is logged.
 */
import { TaskerError, TaskerStatus } from '../ffi/errors';
import type { TaskerLibrary } from '../ffi/library';
import { ErrorType } from '../types/error-type';
import type { JsonObject } from '../types/json';
import { StepHandlerResult } from '../types/step-handler-result';
import type { Logger } from './logger';

/** JSON text of `value`, or the reason it has none (circular, BigInt, nested too deep, ...). */
export function serialize(value: unknown): { json: string } | { error: string } {
  try {
    const json = JSON.stringify(value);
    if (typeof json !== 'string') return { error: 'it serializes to nothing' };
    return { json };
  } catch (error) {
    let message: string;
    try {
      message = error instanceof Error ? error.message : String(error);
    } catch {
      message = 'serializing it threw a value that cannot be shown';
    }
    // Only a stack overflow means "too deep"; "Invalid string length" is a document too large.
    if (error instanceof RangeError && /call stack/i.test(message)) return { error: `nested too deeply (${message})` };
    if (error instanceof RangeError && /string length/i.test(message)) return { error: `too large to serialize (${message})` };
    return { error: message };
  }
}

/** Completes events through the library. */
export class Completion {
  constructor(
    private readonly lib: TaskerLibrary,
    private readonly logger: Logger,
    private readonly workerId: () => string | null
  ) {}

  /** Delivers `outcome` for the event (a checkpoint yield or a completion). Never throws. */
  async deliver(eventId: string, stepUuid: string, outcome: StepHandlerResult, startedAt: number): Promise<void> {
    let result = outcome;
    if (result.checkpoint !== null) {
      const yielded = await this.yieldCheckpoint(eventId, stepUuid, result);
      if (yielded === null) return;
      result = yielded;
    }
    await this.complete(eventId, stepUuid, result, startedAt, true);
  }

  /** Null when the checkpoint was taken (or the event is gone), else the failure to complete with. */
  private async yieldCheckpoint(eventId: string, stepUuid: string, outcome: StepHandlerResult): Promise<StepHandlerResult | null> {
    let text: { json: string } | { error: string };
    try {
      text = serialize({ step_uuid: stepUuid, ...outcome.checkpoint });
    } catch (error) {
      text = { error: error instanceof Error ? error.message : typeof error };
    }
    if ('error' in text) {
      return StepHandlerResult.failure(`the handler's checkpoint is not JSON: ${text.error}`, ErrorType.CHECKPOINT_ERROR, false);
    }
    try {
      await this.lib.checkpointYieldStepEventText(eventId, text.json);
      return null;
    } catch (error) {
      const failed = TaskerError.from(error);
      if (failed?.status === TaskerStatus.UNKNOWN_EVENT) {
        this.logger.warn(`checkpoint not accepted: ${failed.message}`, { step_uuid: stepUuid });
        return null;
      }
      if (failed?.status === TaskerStatus.REFUSED) {
        // The worker gave the step its error result already.
        this.logger.warn(`checkpoint refused: ${failed.message}`, { step_uuid: stepUuid });
        return null;
      }
      const message = error instanceof Error ? error.message : String(error);
      return StepHandlerResult.failure(`checkpoint refused: ${message}`, ErrorType.CHECKPOINT_ERROR, true);
    }
  }

  private async complete(eventId: string, stepUuid: string, outcome: StepHandlerResult, startedAt: number, fallback: boolean): Promise<void> {
    let text: { json: string } | { error: string };
    try {
      const document: JsonObject = outcome.toExecutionResult(stepUuid, performance.now() - startedAt, this.workerId());
      text = serialize(document);
    } catch (error) {
      // A StepHandlerResult whose metadata cannot even be copied (a throwing getter, a revoked proxy).
      text = { error: `building it failed: ${error instanceof Error ? error.message : typeof error}` };
    }
    if ('error' in text) {
      if (fallback) {
        const failure = StepHandlerResult.failure(`the handler's result is not JSON: ${text.error}`, ErrorType.HANDLER_ERROR, false);
        await this.complete(eventId, stepUuid, failure, startedAt, false);
      } else {
        this.logger.error(`result not serializable: ${text.error}`, { step_uuid: stepUuid });
      }
      return;
    }
    try {
      await this.lib.completeStepEventText(eventId, text.json);
    } catch (error) {
      const failed = TaskerError.from(error);
      if (failed?.status === TaskerStatus.INVALID_ARGUMENT && fallback) {
        const failure = StepHandlerResult.failure(
          `the worker refused the handler's result: ${failed.message}`, ErrorType.HANDLER_ERROR, false);
        await this.complete(eventId, stepUuid, failure, startedAt, false);
        return;
      }
      if (failed?.status === TaskerStatus.REFUSED) {
        this.logger.warn(`result refused (the step got an error result): ${failed.message}`, { step_uuid: stepUuid });
        return;
      }
      const message = error instanceof Error ? error.message : String(error);
      this.logger.warn(`result not accepted: ${message}`, { step_uuid: stepUuid });
    }
  }
}
