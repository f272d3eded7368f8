/**
 * The resolver chain (upstream's): a `handler.resolver` hint asks that resolver only (an unknown
 * one is an error); otherwise the resolvers are asked by priority until one answers. The handler
 * is then bound to `handler.method` when it names another entry point than `call`.
 */
import type { ExecutableHandler } from '../handler/base';
import { ResolverNotFoundError } from './errors';
import { effectiveMethod, hasResolverHint, usesMethodDispatch, type HandlerDefinition } from './handler-definition';
import { MethodDispatchWrapper } from './method-dispatch';
import type { BaseResolver } from './resolver';

/** An ordered set of resolvers. */
export class ResolverChain {
  private resolvers: BaseResolver[] = [];

  /** Adds (or replaces, by name) a resolver. */
  addResolver(resolver: BaseResolver): void {
    this.resolvers = [...this.resolvers.filter((r) => r.name !== resolver.name), resolver].sort((a, b) => a.priority - b.priority);
  }

  getResolver(name: string): BaseResolver | undefined {
    return this.resolvers.find((r) => r.name === name);
  }

  /** [name, priority] of each resolver, in the order they are asked. */
  listResolvers(): Array<[string, number]> {
    return this.resolvers.map((r) => [r.name, r.priority]);
  }

  /**
   * The handler for `definition`, or null when no resolver knows it.
   * @throws ResolverNotFoundError for an unknown hint; MethodDispatchError for a missing method.
   */
  async resolve(definition: HandlerDefinition): Promise<ExecutableHandler | null> {
    const handler = hasResolverHint(definition) ? await this.resolveWithHint(definition) : await this.resolveWithChain(definition);
    if (handler === null) return null;
    if (!usesMethodDispatch(definition)) return handler;
    return new MethodDispatchWrapper(handler, effectiveMethod(definition), definition.callable);
  }

  private async resolveWithHint(definition: HandlerDefinition): Promise<ExecutableHandler | null> {
    const name = definition.resolver ?? '';
    const resolver = this.getResolver(name);
    if (resolver === undefined) {
      throw new ResolverNotFoundError(name, definition.callable, this.resolvers.map((r) => r.name));
    }
    return resolver.resolve(definition);
  }

  private async resolveWithChain(definition: HandlerDefinition): Promise<ExecutableHandler | null> {
    for (const resolver of this.resolvers) {
      if (!resolver.canResolve(definition)) continue;
      const handler = await resolver.resolve(definition);
      if (handler !== null) return handler;
    }
    return null;
  }
}
