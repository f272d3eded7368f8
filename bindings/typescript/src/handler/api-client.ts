/**
 * HTTP for API handlers: a fetch-based client with a per-request timeout, and the classification
 * of answers into step results (upstream's APIMixin): 2xx success; 408, 429 and 5xx retryable;
 * other 4xx permanent; no answer (network error, timeout) retryable.
 */
import { ErrorType } from '../types/error-type';
import type { JsonObject } from '../types/json';
import { StepHandlerResult } from '../types/step-handler-result';

/** Statuses worth retrying (besides every 5xx). */
const RETRYABLE_STATUS = new Set([408, 429]);

/** One HTTP answer. */
export class ApiResponse {
  readonly statusCode: number;
  readonly headers: Record<string, string>;
  /** The body: parsed JSON when it is JSON, else its text. */
  readonly body: unknown;

  constructor(statusCode: number, headers: Record<string, string>, body: unknown) {
    this.statusCode = statusCode;
    this.headers = headers;
    this.body = body;
  }

  get ok(): boolean {
    return this.statusCode >= 200 && this.statusCode < 300;
  }

  get isClientError(): boolean {
    return this.statusCode >= 400 && this.statusCode < 500;
  }

  get isServerError(): boolean {
    return this.statusCode >= 500 && this.statusCode < 600;
  }

  /** 408, 429 and 5xx: orchestration should retry the step. */
  get isRetryable(): boolean {
    return this.isServerError || RETRYABLE_STATUS.has(this.statusCode);
  }

  /** The Retry-After header in seconds, or null. */
  get retryAfter(): number | null {
    const value = this.headers['retry-after'];
    if (!value) return null;
    const seconds = Number.parseInt(value, 10);
    return Number.isNaN(seconds) ? null : seconds;
  }

  toJSON(): JsonObject {
    return { status_code: this.statusCode, headers: this.headers, body: this.body };
  }
}

/** The request did not get an answer in time. */
export class ApiTimeoutError extends Error {
  constructor(method: string, url: string, timeoutMs: number) {
    super(`${method} ${url} got no answer within ${timeoutMs} ms`);
    this.name = 'ApiTimeoutError';
  }
}

/** Client settings: base URL, per-request timeout, headers sent with every request. */
export interface ApiClientOptions {
  baseUrl: string;
  timeoutMs?: number;
  defaultHeaders?: Record<string, string>;
}

/** Body options of POST, PUT and PATCH: `body` is sent as JSON unless `json` is false. */
export interface ApiBodyOptions {
  body?: unknown;
  json?: boolean;
  headers?: Record<string, string>;
}

/** A small fetch-based HTTP client with a timeout per request. */
export class ApiClient {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  readonly defaultHeaders: Record<string, string>;

  constructor(options: ApiClientOptions) {
    this.baseUrl = options.baseUrl;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.defaultHeaders = options.defaultHeaders ?? {};
  }

  get(path: string, params?: Record<string, unknown>, headers?: Record<string, string>): Promise<ApiResponse> {
    return this.request('GET', this.url(path, params), { headers });
  }

  post(path: string, options: ApiBodyOptions = {}): Promise<ApiResponse> {
    return this.request('POST', this.url(path), options);
  }

  put(path: string, options: ApiBodyOptions = {}): Promise<ApiResponse> {
    return this.request('PUT', this.url(path), options);
  }

  patch(path: string, options: ApiBodyOptions = {}): Promise<ApiResponse> {
    return this.request('PATCH', this.url(path), options);
  }

  delete(path: string, headers?: Record<string, string>): Promise<ApiResponse> {
    return this.request('DELETE', this.url(path), { headers });
  }

  /**
   * Sends one request.
   * @throws ApiTimeoutError without an answer within the timeout; fetch's error when unreachable.
   */
  async request(method: string, url: string, options: ApiBodyOptions = {}): Promise<ApiResponse> {
    const headers: Record<string, string> = { ...this.defaultHeaders, ...(options.headers ?? {}) };
    let body: string | undefined;
    if (options.body !== undefined) {
      if (options.json === false) {
        body = String(options.body);
      } else {
        body = JSON.stringify(options.body);
        headers['content-type'] = headers['content-type'] ?? 'application/json';
      }
    }
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.timeoutMs);
    try {
      const response = await fetch(url, { method, headers, body, signal: controller.signal });
      const text = await response.text();
      const responseHeaders: Record<string, string> = {};
      response.headers.forEach((value, key) => {
        responseHeaders[key] = value;
      });
      return new ApiResponse(response.status, responseHeaders, parseBody(text));
    } catch (error) {
      if (controller.signal.aborted) throw new ApiTimeoutError(method, url, this.timeoutMs);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  private url(path: string, params?: Record<string, unknown>): string {
    const base = this.baseUrl.endsWith('/') ? this.baseUrl : `${this.baseUrl}/`;
    const url = new URL(path.replace(/^\//, ''), base);
    for (const [key, value] of Object.entries(params ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.append(key, String(value));
    }
    return url.toString();
  }
}

function parseBody(text: string): unknown {
  if (text.length === 0) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** A success result from an answer: `result`, or `{status_code, body}`. */
export function apiSuccess(response: ApiResponse, result?: JsonObject, includeResponse = false): StepHandlerResult {
  const data: JsonObject = result ?? { status_code: response.statusCode, body: response.body };
  if (includeResponse) data.response = response.toJSON();
  return StepHandlerResult.success(data);
}

/** A failure result from a non-2xx answer: 4xx permanent (but 408, 429), 5xx retryable. */
export function apiFailure(response: ApiResponse, message?: string): StepHandlerResult {
  const text = message ?? `HTTP ${response.statusCode}`;
  const metadata: JsonObject = { status_code: response.statusCode, body: response.body };
  if (response.retryAfter !== null) metadata.retry_after_seconds = response.retryAfter;
  if (response.isRetryable) {
    return StepHandlerResult.failure(text, ErrorType.RETRYABLE_ERROR, true, metadata, `HTTP_${response.statusCode}`);
  }
  return StepHandlerResult.failure(text, ErrorType.PERMANENT_ERROR, false, metadata, `HTTP_${response.statusCode}`);
}

/** A retryable failure for a request that got no answer (timeout or network). */
export function connectionFailure(error: unknown, context?: string): StepHandlerResult {
  const message = error instanceof Error ? error.message : String(error);
  const timedOut = error instanceof ApiTimeoutError;
  return StepHandlerResult.failure(
    context ? `${context}: ${message}` : message,
    timedOut ? ErrorType.TIMEOUT : ErrorType.RETRYABLE_ERROR,
    true,
    { exception_type: error instanceof Error ? error.name : typeof error }
  );
}
