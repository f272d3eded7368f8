/** API handlers: steps calling an HTTP service (upstream's ApiHandler). */
import type { JsonObject } from '../types/json';
import type { StepHandlerResult } from '../types/step-handler-result';
import {
  ApiClient,
  apiFailure,
  apiSuccess,
  connectionFailure,
  type ApiBodyOptions,
  type ApiResponse,
} from './api-client';
import { StepHandler } from './base';

/**
 * Base class of API handlers: set `static baseUrl` (and `defaultTimeout` in ms, `defaultHeaders`),
 * call `this.get/post/...`, turn answers into results with `apiSuccess` / `apiFailure`.
 */
export abstract class ApiHandler extends StepHandler {
  static baseUrl = '';
  static defaultTimeout = 30_000;
  static defaultHeaders: Record<string, string> = {};

  private client: ApiClient | null = null;

  /** The HTTP client built from the class's settings. */
  protected get api(): ApiClient {
    if (this.client === null) {
      const ctor = this.constructor as typeof ApiHandler;
      this.client = new ApiClient({ baseUrl: ctor.baseUrl, timeoutMs: ctor.defaultTimeout, defaultHeaders: ctor.defaultHeaders });
    }
    return this.client;
  }

  protected get(path: string, params?: Record<string, unknown>, headers?: Record<string, string>): Promise<ApiResponse> {
    return this.api.get(path, params, headers);
  }

  protected post(path: string, options?: ApiBodyOptions): Promise<ApiResponse> {
    return this.api.post(path, options);
  }

  protected put(path: string, options?: ApiBodyOptions): Promise<ApiResponse> {
    return this.api.put(path, options);
  }

  protected patch(path: string, options?: ApiBodyOptions): Promise<ApiResponse> {
    return this.api.patch(path, options);
  }

  protected delete(path: string, headers?: Record<string, string>): Promise<ApiResponse> {
    return this.api.delete(path, headers);
  }

  protected apiSuccess(response: ApiResponse, result?: JsonObject, includeResponse = false): StepHandlerResult {
    return apiSuccess(response, result, includeResponse);
  }

  protected apiFailure(response: ApiResponse, message?: string): StepHandlerResult {
    return apiFailure(response, message);
  }

  protected connectionError(error: unknown, context?: string): StepHandlerResult {
    return connectionFailure(error, context);
  }
}
