/**
 * The few Node.js globals this package uses. Debian ships no `@types/node` and there is no npm
 * registry here, so they are declared by hand (a subset of Node 18+'s API, compatible with
 * `@types/node` where both are present).
 */

interface NodeTimer {
  ref(): NodeTimer;
  unref(): NodeTimer;
}

declare function setTimeout(callback: (...args: unknown[]) => void, ms?: number): NodeTimer;
declare function clearTimeout(timer: NodeTimer | undefined): void;
declare function setInterval(callback: (...args: unknown[]) => void, ms?: number): NodeTimer;
declare function clearInterval(timer: NodeTimer | undefined): void;
declare function setImmediate(callback: (...args: unknown[]) => void): unknown;

declare const console: {
  log(...args: unknown[]): void;
  info(...args: unknown[]): void;
  warn(...args: unknown[]): void;
  error(...args: unknown[]): void;
};

type NodeSignal = 'SIGTERM' | 'SIGINT';

declare const process: {
  readonly env: Record<string, string | undefined>;
  readonly pid: number;
  cwd(): string;
  exitCode: number | undefined;
  on(event: NodeSignal, listener: (signal: NodeSignal) => void): unknown;
  removeListener(event: NodeSignal, listener: (signal: NodeSignal) => void): unknown;
  readonly stderr: { write(text: string): boolean };
};

declare const performance: { now(): number };

declare function require(id: string): unknown;
declare const __dirname: string;

declare class URL {
  constructor(input: string, base?: string | URL);
  readonly href: string;
  readonly searchParams: URLSearchParams;
  toString(): string;
}

declare class URLSearchParams {
  append(name: string, value: string): void;
}

declare class Headers {
  constructor(init?: Record<string, string>);
  forEach(callback: (value: string, key: string) => void): void;
  get(name: string): string | null;
}

declare class AbortSignal {
  readonly aborted: boolean;
}

declare class AbortController {
  readonly signal: AbortSignal;
  abort(reason?: unknown): void;
}

interface RequestInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

declare class Response {
  readonly status: number;
  readonly ok: boolean;
  readonly headers: Headers;
  text(): Promise<string>;
}

declare function fetch(input: string, init?: RequestInit): Promise<Response>;
