/**
 * The step event the worker hands a foreign handler (`tasker_poll_step_event`, upstream's
 * FfiStepEvent, snake_case as the library sends it). Events are untrusted input: {@link parseStepEvent}
 * checks the parts the SDK relies on and names what is wrong.
 */
import { isObject, objectOrEmpty, type JsonObject } from './json';

/** A step event; unknown fields are kept. */
export interface StepEvent extends JsonObject {
  event_id: string;
  task_uuid: string;
  step_uuid: string;
  correlation_id?: string | null;
  task_sequence_step: {
    task?: JsonObject;
    workflow_step?: JsonObject;
    dependency_results?: JsonObject;
    step_definition?: JsonObject;
  };
}

/** The step event could not be used (the message names the field). */
export class StepEventError extends Error {
  /** The event's id when it had one (the event can then still be completed with a failure). */
  readonly eventId: string | null;
  readonly stepUuid: string | null;

  constructor(message: string, eventId: string | null, stepUuid: string | null) {
    super(message);
    this.name = 'StepEventError';
    this.eventId = eventId;
    this.stepUuid = stepUuid;
  }
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 ? value : null;
}

/**
 * Parses a polled event's JSON text.
 * @throws StepEventError naming what was wrong (with the event id when it could be read).
 */
export function parseStepEvent(json: string): StepEvent {
  let value: unknown;
  try {
    value = JSON.parse(json) as unknown;
  } catch (error) {
    throw new StepEventError(`the step event is not JSON: ${String(error)}`, null, null);
  }
  if (!isObject(value)) throw new StepEventError('the step event is not a JSON object', null, null);
  const eventId = text(value.event_id);
  const stepUuid = text(value.step_uuid);
  if (eventId === null) throw new StepEventError('the step event has no event_id string', null, stepUuid);
  if (stepUuid === null) throw new StepEventError('the step event has no step_uuid string', eventId, null);
  if (text(value.task_uuid) === null) {
    throw new StepEventError('the step event has no task_uuid string', eventId, stepUuid);
  }
  const sequence = value.task_sequence_step;
  if (!isObject(sequence)) {
    throw new StepEventError('the step event has no task_sequence_step object', eventId, stepUuid);
  }
  const definition = sequence.step_definition;
  if (!isObject(definition) || !isObject(definition.handler)) {
    throw new StepEventError('task_sequence_step.step_definition.handler is not an object', eventId, stepUuid);
  }
  const handler = definition.handler;
  if (text(handler.callable) === null) {
    throw new StepEventError('task_sequence_step.step_definition.handler.callable is not a string', eventId, stepUuid);
  }
  for (const key of ['method', 'resolver'] as const) {
    if (handler[key] !== undefined && handler[key] !== null && typeof handler[key] !== 'string') {
      throw new StepEventError(
        `task_sequence_step.step_definition.handler.${key} is neither a string nor null`, eventId, stepUuid);
    }
  }
  for (const key of ['task', 'workflow_step', 'dependency_results'] as const) {
    if (sequence[key] !== undefined && sequence[key] !== null && !isObject(sequence[key])) {
      throw new StepEventError(`task_sequence_step.${key} is not an object`, eventId, stepUuid);
    }
  }
  return value as StepEvent;
}

/** The template's `handler` of an event (`callable`, `method`, `resolver`, `initialization`). */
export function handlerOf(event: StepEvent): JsonObject {
  return objectOrEmpty(objectOrEmpty(event.task_sequence_step.step_definition).handler);
}
