/** Resolver 1 of the chain: callables registered explicitly (`registry.register(...)`). */
import type { ExecutableHandler, StepHandlerClass } from '../../handler/base';
import type { HandlerDefinition } from '../handler-definition';
import type { BaseResolver } from '../resolver';

/** A factory making a handler for a definition (its `initialization` is the step config). */
export type HandlerFactory = (definition: HandlerDefinition) => ExecutableHandler;

/** What may be registered for a callable: a handler class, an instance, or a factory. */
export type HandlerEntry = StepHandlerClass | ExecutableHandler | HandlerFactory;

function isHandlerClass(entry: HandlerEntry): entry is StepHandlerClass {
  return typeof entry === 'function' && typeof (entry as { handlerName?: unknown }).handlerName === 'string';
}

/** Callable → handler entry; a class gets a fresh instance per step. */
export class ExplicitMappingResolver implements BaseResolver {
  readonly name: string;
  readonly priority = 10;
  private readonly entries = new Map<string, HandlerEntry>();

  constructor(name = 'explicit_mapping') {
    this.name = name;
  }

  register(callable: string, entry: HandlerEntry): void {
    this.entries.set(callable, entry);
  }

  unregister(callable: string): boolean {
    return this.entries.delete(callable);
  }

  callables(): string[] {
    return [...this.entries.keys()].sort();
  }

  canResolve(definition: HandlerDefinition): boolean {
    return this.entries.has(definition.callable);
  }

  async resolve(definition: HandlerDefinition): Promise<ExecutableHandler | null> {
    const entry = this.entries.get(definition.callable);
    if (entry === undefined) return null;
    if (isHandlerClass(entry)) return new entry();
    if (typeof entry === 'function') return (entry as HandlerFactory)(definition);
    return entry;
  }
}
