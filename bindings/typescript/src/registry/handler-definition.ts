/** The template's `handler` block as the resolvers see it. */
import { objectOrEmpty, stringOrNull, type JsonObject } from '../types/json';

/** `handler.callable`, `method` (null: `call`), `resolver` hint (null: the chain), `initialization`. */
export interface HandlerDefinition {
  callable: string;
  method: string | null;
  resolver: string | null;
  initialization: JsonObject;
}

/** A definition from a template `handler` object (untrusted: wrong types read as absent). */
export function definitionFrom(handler: JsonObject): HandlerDefinition {
  return {
    callable: stringOrNull(handler.callable) ?? '',
    method: stringOrNull(handler.method),
    resolver: stringOrNull(handler.resolver),
    initialization: objectOrEmpty(handler.initialization),
  };
}

/** A definition of just a callable. */
export function definitionOf(callable: string): HandlerDefinition {
  return { callable, method: null, resolver: null, initialization: {} };
}

/** The entry point: `method`, or `call`. */
export function effectiveMethod(definition: HandlerDefinition): string {
  return definition.method ?? 'call';
}

/** True when the definition names an entry point other than `call`. */
export function usesMethodDispatch(definition: HandlerDefinition): boolean {
  return definition.method !== null && definition.method !== 'call';
}

/** True when a resolver hint skips the chain. */
export function hasResolverHint(definition: HandlerDefinition): boolean {
  return definition.resolver !== null;
}
