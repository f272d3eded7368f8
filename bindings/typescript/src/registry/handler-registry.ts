/**
 * The handler registry: what the worker asks for each step's handler. It holds the resolver
 * chain (explicit mapping, then class lookup, plus any resolver added).
 */
import type { ExecutableHandler, StepHandlerClass } from '../handler/base';
import { definitionOf, type HandlerDefinition } from './handler-definition';
import { ResolverChain } from './resolver-chain';
import type { BaseResolver } from './resolver';
import { ClassLookupResolver } from './resolvers/class-lookup';
import { ExplicitMappingResolver, type HandlerEntry } from './resolvers/explicit-mapping';

/** Handler registration and resolution. */
export class HandlerRegistry {
  readonly chain = new ResolverChain();
  readonly explicit = new ExplicitMappingResolver();
  readonly classLookup: ClassLookupResolver;

  /** @param handlerBaseDir - where class lookup imports relative module paths from. */
  constructor(handlerBaseDir?: string) {
    this.classLookup = new ClassLookupResolver(handlerBaseDir);
    this.chain.addResolver(this.explicit);
    this.chain.addResolver(this.classLookup);
  }

  /**
   * Registers a handler: `register(HandlerClass)` under its `handlerName`, or
   * `register(callable, classOrInstanceOrFactory)`.
   * @throws Error when the callable is already registered or the class has no handlerName.
   */
  register(callableOrClass: string | StepHandlerClass, entry?: HandlerEntry): this {
    let callable: string;
    let value: HandlerEntry;
    if (typeof callableOrClass === 'string') {
      if (entry === undefined) throw new TypeError(`register('${callableOrClass}'): no handler given`);
      callable = callableOrClass;
      value = entry;
    } else {
      callable = callableOrClass.handlerName;
      value = callableOrClass;
    }
    if (typeof callable !== 'string' || callable.length === 0) {
      throw new TypeError('register: the handler class has no static handlerName');
    }
    if (this.explicit.canResolve(definitionOf(callable))) {
      throw new Error(`a handler for callable '${callable}' is already registered`);
    }
    this.explicit.register(callable, value);
    return this;
  }

  /** Makes a handler class findable by class lookup (its handlerName or class name). */
  addClass(handlerClass: StepHandlerClass): this {
    this.classLookup.add(handlerClass);
    return this;
  }

  /** Adds a resolver (usable as a `handler.resolver` hint by its name). */
  addResolver(resolver: BaseResolver): this {
    this.chain.addResolver(resolver);
    return this;
  }

  /** The explicitly registered callables. */
  callables(): string[] {
    return this.explicit.callables();
  }

  /** The handler of a definition (see {@link ResolverChain.resolve}). */
  resolve(definition: HandlerDefinition | string): Promise<ExecutableHandler | null> {
    return this.chain.resolve(typeof definition === 'string' ? definitionOf(definition) : definition);
  }
}
