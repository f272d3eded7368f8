/**
 * The typed view of a step event a handler receives (upstream's StepContext, camelCase, built from
 * the snake_case event).
 */
import type { BatchCursor } from './batch';
import { integerOr, isObject, objectOrEmpty, stringOrNull, type JsonObject } from './json';
import { handlerOf, type StepEvent } from './step-event';

/** A checkpoint persisted by an earlier checkpoint yield of this step. */
export interface Checkpoint {
  /** Where the handler stopped (any JSON value). */
  cursor: unknown;
  itemsProcessed: number;
  /** Running totals carried across yields. */
  accumulatedResults: unknown;
}

/** Everything a handler knows about the step it runs. */
export class StepContext {
  /** The raw event (snake_case, as the worker sent it). */
  readonly event: StepEvent;
  readonly eventId: string;
  readonly taskUuid: string;
  readonly stepUuid: string;
  readonly correlationId: string;
  /** The template's `handler.callable`. */
  readonly handlerName: string;
  /** The template's `handler.method` (null: `call`). */
  readonly handlerMethod: string | null;
  /** The template's `handler.resolver` hint, or null. */
  readonly handlerResolver: string | null;
  readonly stepName: string;
  readonly namespace: string;
  readonly taskName: string;
  readonly taskVersion: string;
  /** The task's context (its inputs). */
  readonly inputData: JsonObject;
  /** The step's own inputs (`workflow_step.inputs`: a batch worker's cursor). */
  readonly stepInputs: JsonObject;
  /** The step's `handler.initialization` in the template. */
  readonly stepConfig: JsonObject;
  /** Stored results of the parent steps, by step name. */
  readonly dependencyResults: JsonObject;
  /** Attempts of this step so far, this one included (1 on the first run). */
  readonly attempts: number;
  readonly maxAttempts: number;
  /** The persisted checkpoint when the step resumes after a yield, else null. */
  readonly checkpoint: Checkpoint | null;

  constructor(event: StepEvent) {
    const sequence = event.task_sequence_step;
    const taskWrapper = objectOrEmpty(sequence.task);
    const task = isObject(taskWrapper.task) ? taskWrapper.task : taskWrapper;
    const step = objectOrEmpty(sequence.workflow_step);
    const definition = objectOrEmpty(sequence.step_definition);
    const handler = handlerOf(event);
    this.event = event;
    this.eventId = event.event_id;
    this.taskUuid = event.task_uuid;
    this.stepUuid = event.step_uuid;
    this.correlationId = stringOrNull(event.correlation_id) ?? '';
    this.handlerName = stringOrNull(handler.callable) ?? '';
    this.handlerMethod = stringOrNull(handler.method);
    this.handlerResolver = stringOrNull(handler.resolver);
    this.stepName = stringOrNull(step.name) ?? stringOrNull(definition.name) ?? '';
    this.namespace = stringOrNull(taskWrapper.namespace_name) ?? '';
    this.taskName = stringOrNull(taskWrapper.task_name) ?? '';
    this.taskVersion = stringOrNull(taskWrapper.task_version) ?? '';
    this.inputData = objectOrEmpty(task.context);
    this.stepInputs = objectOrEmpty(step.inputs);
    this.stepConfig = objectOrEmpty(handler.initialization);
    this.dependencyResults = objectOrEmpty(sequence.dependency_results);
    this.attempts = integerOr(step.attempts, 0);
    this.maxAttempts = integerOr(step.max_attempts, 1);
    const raw = step.checkpoint;
    this.checkpoint =
      isObject(raw) && raw.cursor !== undefined && raw.cursor !== null
        ? { cursor: raw.cursor, itemsProcessed: integerOr(raw.items_processed, 0), accumulatedResults: raw.accumulated_results ?? null }
        : null;
  }

  /** Upstream's name for {@link attempts}. */
  get retryCount(): number {
    return this.attempts;
  }

  /** Upstream's name for {@link maxAttempts}. */
  get maxRetries(): number {
    return this.maxAttempts;
  }

  /** The task context (alias of {@link inputData}). */
  get taskContext(): JsonObject {
    return this.inputData;
  }

  /** A value of the task context, or undefined. */
  getInput<T = unknown>(key: string): T | undefined {
    return this.inputData[key] as T | undefined;
  }

  /** A value of the task context, or `defaultValue` when it is missing. */
  getInputOr<T = unknown>(key: string, defaultValue: T): T {
    const value = this.inputData[key];
    return value === undefined || value === null ? defaultValue : (value as T);
  }

  /** A value of the step's handler initialization, or undefined. */
  getConfig<T = unknown>(key: string): T | undefined {
    return this.stepConfig[key] as T | undefined;
  }

  /** The `result` a parent step returned (unwrapped from its stored result), or null. */
  getDependencyResult<T = unknown>(stepName: string): T | null {
    const stored = this.dependencyResults[stepName];
    if (stored === undefined || stored === null) return null;
    if (isObject(stored) && 'result' in stored) return stored.result as T;
    return stored as T;
  }

  /** A nested field of a parent's result (`getDependencyField('fetch', 'data', 'id')`), or null. */
  getDependencyField(stepName: string, ...path: string[]): unknown {
    let value: unknown = this.getDependencyResult(stepName);
    for (const key of path) {
      if (!isObject(value)) return null;
      value = value[key];
    }
    return value ?? null;
  }

  /** The results of every parent whose name starts with `prefix` (batch workers), by name. */
  getAllDependencyResults(prefix: string): unknown[] {
    return Object.keys(this.dependencyResults)
      .filter((name) => name.startsWith(prefix))
      .sort()
      .map((name) => this.getDependencyResult(name))
      .filter((value) => value !== null);
  }

  /** The names of the parent steps with results. */
  getDependencyResultKeys(): string[] {
    return Object.keys(this.dependencyResults);
  }

  /** True when an earlier attempt of this step ran. */
  isRetry(): boolean {
    return this.attempts > 1;
  }

  /** True when a retryable failure now would not be retried. */
  isLastRetry(): boolean {
    return this.attempts >= this.maxAttempts;
  }

  /** True when the step resumes after a checkpoint yield. */
  hasCheckpoint(): boolean {
    return this.checkpoint !== null;
  }

  /** The checkpoint's cursor, or null. */
  get checkpointCursor(): unknown {
    return this.checkpoint?.cursor ?? null;
  }

  /** The checkpoint's accumulated results, or null. */
  get accumulatedResults(): unknown {
    return this.checkpoint?.accumulatedResults ?? null;
  }

  /** A batch worker's cursor (`{batch_id, start_cursor, end_cursor, batch_size}`), else null. */
  get batchCursor(): BatchCursor | null {
    const cursor = this.stepInputs.cursor;
    if (!isObject(cursor)) return null;
    const { batch_id: batchId, start_cursor: start, end_cursor: end, batch_size: size } = cursor;
    if (typeof batchId !== 'string' || typeof start !== 'number' || typeof end !== 'number') return null;
    return { batch_id: batchId, start_cursor: start, end_cursor: end, batch_size: typeof size === 'number' ? size : end - start };
  }

  /** True for the placeholder worker of a batch with no items. */
  get isNoOpBatch(): boolean {
    return this.stepInputs.is_no_op === true;
  }
}
