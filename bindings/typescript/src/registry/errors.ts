/** Why a step's handler could not be resolved (each a permanent failure of the step). */

/** Base class of resolution failures. */
export class ResolutionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ResolutionError';
  }
}

/** `handler.resolver` names no registered resolver. */
export class ResolverNotFoundError extends ResolutionError {
  readonly resolverName: string;
  constructor(resolverName: string, callable: string, known: string[]) {
    super(
      `resolver '${resolverName}' (handler.resolver of callable '${callable}') is not registered; ` +
        `registered resolvers: ${known.length > 0 ? known.join(', ') : 'none'}`
    );
    this.name = 'ResolverNotFoundError';
    this.resolverName = resolverName;
  }
}

/** `handler.method` names no method of the resolved handler. */
export class MethodDispatchError extends ResolutionError {
  readonly callable: string;
  readonly methodName: string;
  constructor(callable: string, handlerName: string, methodName: string) {
    super(`handler '${handlerName}' for callable '${callable}' has no method '${methodName}' (handler.method)`);
    this.name = 'MethodDispatchError';
    this.callable = callable;
    this.methodName = methodName;
  }
}
