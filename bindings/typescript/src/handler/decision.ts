/** Decision points: a handler choosing which template steps to create (upstream's DecisionHandler). */
import type { JsonObject } from '../types/json';
import { StepHandlerResult } from '../types/step-handler-result';
import { StepHandler } from './base';

/** `decision_point_outcome` of a decision step's result (the Swift model's DecisionPointOutcome). */
export type DecisionPointOutcome = { type: 'create_steps'; step_names: string[] } | { type: 'no_branches' };

function withMetadata(name: string, version: string, metadata?: JsonObject): JsonObject {
  return { ...(metadata ?? {}), decision_handler: name, decision_version: version };
}

/** A decision result creating `stepNames` (template steps depending on the decision step). */
export function decisionResult(
  stepNames: string[],
  routingContext?: JsonObject,
  metadata?: JsonObject,
  extra: JsonObject = {}
): StepHandlerResult {
  const outcome: DecisionPointOutcome = { type: 'create_steps', step_names: [...stepNames] };
  const result: JsonObject = { ...extra, decision_point_outcome: outcome };
  if (routingContext && Object.keys(routingContext).length > 0) result.routing_context = routingContext;
  return StepHandlerResult.success(result, metadata);
}

/** A decision result creating no step. */
export function noBranchesResult(reason?: string, routingContext?: JsonObject, metadata?: JsonObject): StepHandlerResult {
  const outcome: DecisionPointOutcome = { type: 'no_branches' };
  const result: JsonObject = { decision_point_outcome: outcome };
  if (reason) result.reason = reason;
  if (routingContext && Object.keys(routingContext).length > 0) result.routing_context = routingContext;
  return StepHandlerResult.success(result, metadata);
}

/** Base class of decision handlers: `call` returns `decisionSuccess([...])` or `skipBranches(...)`. */
export abstract class DecisionHandler extends StepHandler {
  /** Create the named steps. */
  protected decisionSuccess(steps: string[], routingContext?: JsonObject, metadata?: JsonObject): StepHandlerResult {
    return decisionResult(steps, routingContext, withMetadata(this.name, this.version, metadata));
  }

  /** Create no step. */
  protected skipBranches(reason: string, routingContext?: JsonObject, metadata?: JsonObject): StepHandlerResult {
    return noBranchesResult(reason, routingContext, withMetadata(this.name, this.version, metadata));
  }

  /** The decision could not be made (permanent by default). */
  protected decisionFailure(message: string, errorType = 'decision_error', retryable = false, metadata?: JsonObject): StepHandlerResult {
    return StepHandlerResult.failure(message, errorType, retryable, withMetadata(this.name, this.version, metadata));
  }
}
