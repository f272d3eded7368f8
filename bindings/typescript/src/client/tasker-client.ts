/**
 * The orchestration client (upstream's TaskerClient) over `tasker_client_*`: calls to the
 * orchestration's REST API configured by the running worker's `[worker.orchestration_client]`.
 * Each call runs off the event loop and resolves to the API's JSON body.
 *
 * Needs a running worker (bootstrapped in this process) and a library exporting the client
 * functions; otherwise each call rejects with a clear error.
 */
import { TaskerError } from '../ffi/errors';
import { library, type TaskerLibrary } from '../ffi/library';
import type { JsonObject } from '../types/json';

/** A task to create (camelCase; sent as the API's snake_case TaskRequest). */
export interface CreateTaskOptions {
  name: string;
  namespace?: string;
  version?: string;
  context?: JsonObject;
  initiator?: string;
  sourceSystem?: string;
  reason?: string;
  tags?: string[];
  priority?: number;
  correlationId?: string;
  parentCorrelationId?: string;
  idempotencyKey?: string;
}

/** Filters and page of {@link TaskerClient.listTasks}. */
export interface ListTasksOptions {
  /** 1...1000 (default 50). */
  limit?: number;
  /** A multiple of `limit` (default 0). */
  offset?: number;
  namespace?: string;
  status?: string;
}

/** A client call failed: `status`/`code` are the library's (TASKER_ERR_CLIENT: the API's answer). */
export class TaskerClientError extends Error {
  readonly status: number | null;
  readonly code: string | null;
  constructor(message: string, status: number | null, code: string | null) {
    super(message);
    this.name = 'TaskerClientError';
    this.status = status;
    this.code = code;
  }
}

/** The eight client calls. */
export class TaskerClient {
  private readonly lib: TaskerLibrary;

  constructor(lib?: TaskerLibrary) {
    this.lib = lib ?? library();
  }

  /** POST /v1/tasks. */
  createTask(options: CreateTaskOptions): Promise<JsonObject> {
    const request: JsonObject = {
      name: options.name,
      namespace: options.namespace ?? 'default',
      version: options.version ?? '1.0.0',
      context: options.context ?? {},
      initiator: options.initiator ?? 'tasker-typescript',
      source_system: options.sourceSystem ?? 'tasker-typescript',
      reason: options.reason ?? 'Task requested',
      tags: options.tags ?? [],
    };
    if (options.priority !== undefined) request.priority = options.priority;
    if (options.correlationId !== undefined) request.correlation_id = options.correlationId;
    if (options.parentCorrelationId !== undefined) request.parent_correlation_id = options.parentCorrelationId;
    if (options.idempotencyKey !== undefined) request.idempotency_key = options.idempotencyKey;
    return this.call('createTask', (n) => n.clientCreateTask(JSON.stringify(request))) as Promise<JsonObject>;
  }

  /** GET /v1/tasks/{uuid}. */
  getTask(taskUuid: string): Promise<JsonObject> {
    return this.call('getTask', (n) => n.clientGetTask(taskUuid)) as Promise<JsonObject>;
  }

  /** GET /v1/tasks (`{tasks, pagination}`). */
  listTasks(options: ListTasksOptions = {}): Promise<JsonObject> {
    return this.call('listTasks', (n) =>
      n.clientListTasks(options.limit ?? 50, options.offset ?? 0, options.namespace ?? null, options.status ?? null)
    ) as Promise<JsonObject>;
  }

  /** DELETE /v1/tasks/{uuid} (`{cancelled, task}`). */
  cancelTask(taskUuid: string): Promise<JsonObject> {
    return this.call('cancelTask', (n) => n.clientCancelTask(taskUuid)) as Promise<JsonObject>;
  }

  /** GET /v1/tasks/{uuid}/workflow_steps. */
  listTaskSteps(taskUuid: string): Promise<JsonObject[]> {
    return this.call('listTaskSteps', (n) => n.clientListTaskSteps(taskUuid)) as Promise<JsonObject[]>;
  }

  /** GET /v1/tasks/{uuid}/workflow_steps/{step}. */
  getStep(taskUuid: string, stepUuid: string): Promise<JsonObject> {
    return this.call('getStep', (n) => n.clientGetStep(taskUuid, stepUuid)) as Promise<JsonObject>;
  }

  /** GET /v1/tasks/{uuid}/workflow_steps/{step}/audit. */
  getStepAuditHistory(taskUuid: string, stepUuid: string): Promise<JsonObject[]> {
    return this.call('getStepAuditHistory', (n) => n.clientGetStepAuditHistory(taskUuid, stepUuid)) as Promise<JsonObject[]>;
  }

  /** GET /health of the orchestration. */
  healthCheck(): Promise<JsonObject> {
    return this.call('healthCheck', (n) => n.clientHealthCheck()) as Promise<JsonObject>;
  }

  private async call(name: string, run: Parameters<TaskerLibrary['clientCall']>[1]): Promise<unknown> {
    try {
      return await this.lib.clientCall(name, run);
    } catch (error) {
      const failed = TaskerError.from(error);
      const message = error instanceof Error ? error.message : String(error);
      const code = failed?.code ?? (error as { code?: unknown }).code;
      throw new TaskerClientError(message, failed?.status ?? null, typeof code === 'string' ? code : null);
    }
  }
}
