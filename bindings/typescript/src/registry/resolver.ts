/** A resolver of the chain: turns a handler definition into a handler instance. */
import type { ExecutableHandler } from '../handler/base';
import type { HandlerDefinition } from './handler-definition';

/** A resolver; the chain asks them by ascending `priority`. */
export interface BaseResolver {
  /** The name a template's `handler.resolver` hint uses. */
  readonly name: string;
  /** Lower runs first (explicit mapping 10, class lookup 100). */
  readonly priority: number;
  /** True when this resolver may know the callable. */
  canResolve(definition: HandlerDefinition): boolean;
  /** A handler instance for the definition, or null. */
  resolve(definition: HandlerDefinition): Promise<ExecutableHandler | null>;
}
