/**
 * Resolver 2 of the chain: the callable names a handler class, either one made known to the
 * registry (`registry.addClass(Cls)`: matched by its `handlerName` or class name), or a module to
 * import: `./path/to/module.js#ExportName` (relative to `baseDir`, default `$TYPESCRIPT_HANDLER_PATH` or
 * the working directory, and never outside it; without `#`, the default export or the first exported
 * handler class).
 */
import type { ExecutableHandler, StepHandlerClass } from '../../handler/base';
import type { HandlerDefinition } from '../handler-definition';
import type { BaseResolver } from '../resolver';

const IMPORTABLE = /^(\.\.?\/|\/|@[\w-]+\/)/;

function isHandlerClass(value: unknown): value is StepHandlerClass {
  return typeof value === 'function' && typeof (value as { handlerName?: unknown }).handlerName === 'string';
}

/** `import()` kept as a real dynamic import in the CommonJS output (handler modules may be ESM). */
const importModule = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<unknown>;

/** Handler classes by name, and importable module paths. */
export class ClassLookupResolver implements BaseResolver {
  readonly name = 'class_lookup';
  readonly priority = 100;
  private readonly classes = new Map<string, StepHandlerClass>();
  private readonly baseDir: string;

  constructor(baseDir?: string) {
    this.baseDir = baseDir ?? process.env.TYPESCRIPT_HANDLER_PATH ?? '.';
  }

  /** Makes `handlerClass` findable by its handlerName and its class name. */
  add(handlerClass: StepHandlerClass): void {
    this.classes.set(handlerClass.handlerName, handlerClass);
    if (handlerClass.name) this.classes.set(handlerClass.name, handlerClass);
  }

  canResolve(definition: HandlerDefinition): boolean {
    return this.classes.has(definition.callable) || IMPORTABLE.test(definition.callable);
  }

  async resolve(definition: HandlerDefinition): Promise<ExecutableHandler | null> {
    const known = this.classes.get(definition.callable);
    if (known !== undefined) return new known();
    if (!IMPORTABLE.test(definition.callable)) return null;
    const [path, exportName] = definition.callable.split('#', 2) as [string, string | undefined];
    const specifier = this.specifier(path);
    if (specifier === null) return null;
    const module = await importModule(specifier);
    if (typeof module !== 'object' || module === null) return null;
    const exports = module as Record<string, unknown>;
    const candidate = exportName !== undefined ? exports[exportName] : exports.default;
    if (isHandlerClass(candidate)) return new candidate();
    if (exportName === undefined) {
      const found = Object.values(exports).find(isHandlerClass);
      if (found) return new found();
    }
    return null;
  }

  /**
   * The module a callable's path names, only inside the handler directory (`baseDir`): a template
   * may name `./payments/refund.js`, never `/tmp/anything.js` or `../../elsewhere.js` (importing a
   * module runs its code). A package (`@scope/name`) is imported as Node resolves it.
   */
  private specifier(path: string): string | null {
    if (path.startsWith('@')) return path;
    const base = new URL(`file://${this.absoluteBase()}/`);
    const target = path.startsWith('/') ? new URL(`file://${path}`) : new URL(path, base);
    return target.href.startsWith(base.href) ? target.href : null;
  }

  private absoluteBase(): string {
    if (this.baseDir.startsWith('/')) return this.baseDir;
    return `${process.cwd()}/${this.baseDir}`;
  }
}
