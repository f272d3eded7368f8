/*
 * tasker_worker.h — the C ABI of the Swift Tasker worker (library product `TaskerWorkerFFI`,
 * `libTaskerWorkerFFI.so`).
 *
 * The whole worker daemon (listener, poller, claim, dispatch, completion, domain events, REST and
 * gRPC as configured) runs inside the host process. Steps whose handler callable has no Swift
 * handler go to the FFI dispatch channel, where the host's handlers (Python, Ruby, anything with a
 * C FFI) poll for them and complete them. A step is claimed exactly as for a Swift handler (one
 * transaction), its result is stored through the same completion pipeline (one transaction, domain
 * events after commit), and shutdown drains it like a Swift handler.
 *
 * Conventions (every function):
 *   - Strings in and out are NUL-terminated UTF-8. JSON in and out is a UTF-8 JSON document.
 *   - The return value is a `tasker_status`. On anything but TASKER_OK, `tasker_last_error()` gives
 *     a message naming what was wrong and where; output parameters are then left NULL / 0.
 *   - A `char **` output receives a string the library allocated; the caller frees it with
 *     `tasker_string_free`. A NULL output pointer is TASKER_ERR_INVALID_ARGUMENT.
 *   - Thread-safe: any thread may call any function at any time, several at once (several threads
 *     may poll and complete concurrently). Blocking calls (bootstrap, stop, a poll with a timeout)
 *     block only the calling thread; call them without holding a global interpreter lock.
 *   - One embedded worker per process. Calls that need it before `tasker_worker_bootstrap` or
 *     after `tasker_worker_stop` return TASKER_ERR_NOT_RUNNING.
 *   - The library installs no signal handlers: the host calls `tasker_worker_stop` (or
 *     `tasker_worker_begin_shutdown`) when it is told to stop (SIGTERM).
 *   - Once a worker has been bootstrapped the library stays loaded until the process exits
 *     (`dlclose` does not unmap it): its threads may still run its code after `tasker_worker_stop`.
 */
#ifndef TASKER_WORKER_H
#define TASKER_WORKER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The status every call returns. */
typedef enum tasker_status {
    TASKER_OK = 0,
    /* A NULL pointer, malformed UTF-8 or JSON, or JSON of the wrong shape (the message names the field). */
    TASKER_ERR_INVALID_ARGUMENT = 1,
    /* No worker is running (not bootstrapped yet, or stopped). */
    TASKER_ERR_NOT_RUNNING = 2,
    /* `tasker_worker_bootstrap` while a worker is already running in this process. */
    TASKER_ERR_ALREADY_RUNNING = 3,
    /* The event id names no pending step event (never issued, already completed, or timed out). */
    TASKER_ERR_UNKNOWN_EVENT = 4,
    /* Bootstrap failed: configuration, templates or database (the message says which). */
    TASKER_ERR_BOOTSTRAP = 5,
    /* The result or checkpoint was refused (for example not storable); the step gets an error result. */
    TASKER_ERR_REFUSED = 6,
    /* An orchestration client call failed: the API answered an error (the message gives the method,
     * path, HTTP status and the API's own message) or could not be reached within the configured
     * timeout and retries. */
    TASKER_ERR_CLIENT = 7,
    /* Anything else; the message says what. */
    TASKER_ERR_INTERNAL = 99
} tasker_status;

/* ---- Errors and memory ------------------------------------------------------------------- */

/* The calling thread's last error message (a copy to free with `tasker_string_free`), or NULL when
 * the thread's last call succeeded. */
char *tasker_last_error(void);

/* Frees a string returned by this library. NULL is ignored. */
void tasker_string_free(char *string);

/* The library's version (static storage; do not free), e.g. "0.1.0". */
const char *tasker_version(void);

/* ---- Lifecycle ----------------------------------------------------------------------------- */

/* Starts the embedded worker and returns once it serves its queues (templates registered,
 * listener and poller running). `config_json` is a JSON object (or NULL for `{}`):
 *   "environment"        TASKER_ENV (test | development | production); default: $TASKER_ENV
 *   "config_path"        a configuration file or directory; default: $TASKER_CONFIG_PATH / config/tasker
 *   "database_url"       default: $DATABASE_URL
 *   "template_path"      task template directory; default: $TASKER_TEMPLATE_PATH
 *   "web_bind_address"   REST "host:port" (port 0 = any free port); default from configuration
 *   "grpc_bind_address"  gRPC "host:port"; default from configuration
 *   "log_level"          trace | debug | info | warning | error; default: $RUST_LOG / info
 *   "log_format"         text | json
 * Unknown keys are refused (TASKER_ERR_INVALID_ARGUMENT naming the key). `result_json` receives
 * {"handle_id","status":"started","message","worker_id","namespaces":[..],"web_address","grpc_address"}. */
tasker_status tasker_worker_bootstrap(const char *config_json, char **result_json);

/* Graceful shutdown, waited for: intake stops, running steps (Swift and foreign) drain within the
 * configured deadline, every result is stored, servers stop. Idempotent: when no worker runs,
 * returns TASKER_OK with {"status":"not_running"}; else {"status":"stopped"}. */
tasker_status tasker_worker_stop(char **result_json);

/* Begins the graceful shutdown and returns at once ({"status":"shutting_down"}); pending and
 * polled step events can still be completed until the drain deadline. */
tasker_status tasker_worker_begin_shutdown(char **result_json);

/* {"running","environment","worker_id","supported_namespaces":[..],"web_api_enabled",
 *  "database_pool_size","database_pool_idle","shutting_down"}. */
tasker_status tasker_worker_status(char **result_json);

/* 1 while a worker runs (bootstrapped, not stopped), else 0. */
tasker_status tasker_worker_is_running(int32_t *running);

/* ---- FFI dispatch channel ------------------------------------------------------------------ */

/* The next step event for a foreign handler. Waits up to `timeout_ms` (0: return at once) and wakes
 * as soon as a step arrives; `*event_json` is NULL when none came. The event:
 * {"event_id","task_uuid","step_uuid","correlation_id","trace_id":null,"span_id":null,
 *  "task_correlation_id","parent_correlation_id",
 *  "task_sequence_step":{"task":{..},"workflow_step":{..},"dependency_results":{..},"step_definition":{..}}}
 * (the same document as upstream's FfiStepEvent): "task" is {"task":{<tasks columns, context>},
 * "task_name","task_version","namespace_name"}; "workflow_step" the workflow_steps columns (as claimed:
 * attempts counted, in_process true) with "name","template_step_name","inputs","checkpoint";
 * "dependency_results" {"<step name>":<StepExecutionResult>}; "step_definition" the template step
 * (handler.callable, handler.initialization, ...). Timestamps of rows are naive UTC
 * ("2026-03-21T21:16:08.123456"). */
tasker_status tasker_poll_step_event(int32_t timeout_ms, char **event_json);

/* Completes a polled event with a result in the StepExecutionResult shape (JSON object; missing
 * fields take their defaults, `step_uuid` must match the event's; a failure without
 * `metadata.retryable` takes `error.retryable`, without `metadata.error_type` `error.error_type`). A late completion (after the
 * event timed out and got its `handler_timeout` result) is TASKER_ERR_UNKNOWN_EVENT with a
 * message saying it timed out. */
tasker_status tasker_complete_step_event(const char *event_id, const char *result_json);

/* The handler yields a checkpoint (JSON object {"step_uuid","cursor","items_processed",
 * "accumulated_results"}): it is persisted and the step is dispatched again as a new event
 * carrying the checkpoint in `workflow_step.checkpoint`. */
tasker_status tasker_checkpoint_yield_step_event(const char *event_id, const char *checkpoint_json);

/* {"pending_count","oldest_pending_age_ms","newest_pending_age_ms","oldest_event_id",
 *  "starvation_detected","starving_event_count","polls","completions","timeouts"} plus
 *  "checkpoints","queued_count" (not polled yet),"blocked_count" (waiting for room in
 *  dispatch_buffer_size),"starvation_warnings" (logged so far),"waiting_pollers". "Pending" is every
 *  event without an outcome yet, polled or not (as upstream). */
tasker_status tasker_ffi_dispatch_metrics(char **metrics_json);

/* Logs a warning for every pending event older than the starvation threshold; `*starving` gets
 * their count. */
tasker_status tasker_check_starvation_warnings(int32_t *starving);

/* Gives every event pending past `completion_timeout_ms` its retryable `handler_timeout` result
 * now (the channel also does this on its own); `*cleaned` gets their count. */
tasker_status tasker_cleanup_timeouts(int64_t *cleaned);

/* ---- In-process domain events -------------------------------------------------------------- */

/* The next `fast`/`broadcast` domain event (upstream's DomainEvent JSON), waiting up to
 * `timeout_ms`; `*event_json` is NULL when none came. */
tasker_status tasker_poll_in_process_event(int32_t timeout_ms, char **event_json);

/* ---- Observability -------------------------------------------------------------------------- */

/* The `/health/detailed` body. */
tasker_status tasker_health(char **health_json);
/* The `/metrics/worker` body plus "ffi_dispatch" (as tasker_ffi_dispatch_metrics). */
tasker_status tasker_metrics(char **metrics_json);
/* The `/config` body (secrets redacted). */
tasker_status tasker_worker_config(char **config_json);

/* ---- Orchestration client ------------------------------------------------------------------- */

/* Synchronous calls to an orchestration's REST API (ours, `tasker-dev orchestrate`, or upstream's),
 * as upstream's FFI client bridge makes them. Configured by the running worker's
 * `[worker.orchestration_client]`: `base_url`, `timeout_ms` (each attempt), `max_retries` (a request
 * that got no answer, or a 502/503/504, is sent again after a growing pause; a 4xx never is), and
 * `auth` (upstream's `[worker.orchestration_client.auth]`: `type = "bearer"` with `token`, or
 * `type = "api_key"` with `key` and `header_name`, default "X-API-Key").
 * They need a running worker (TASKER_ERR_NOT_RUNNING otherwise) and block the calling thread.
 * A uuid argument that is not a UUID is TASKER_ERR_INVALID_ARGUMENT. A non-2xx answer, no answer,
 * or an answer that is not JSON (or is larger than 16 MiB, or nested deeper than 128 levels) is
 * TASKER_ERR_CLIENT. Outputs are the API's JSON answer unless said otherwise. */

/* GET /health; the answer with "healthy": true (as upstream's bridge answers). */
tasker_status tasker_client_health_check(char **result_json);
/* POST /v1/tasks with `request_json`, a TaskRequest object ({"name","namespace","version","context",
 * "initiator","source_system","reason",...}). */
tasker_status tasker_client_create_task(const char *request_json, char **result_json);
/* GET /v1/tasks/{task_uuid}. */
tasker_status tasker_client_get_task(const char *task_uuid, char **result_json);
/* GET /v1/tasks?page&per_page&namespace&status: `limit` 1...1000 tasks from `offset` (a multiple of
 * `limit`, as the API pages), `namespace_name` and `status` NULL for any. */
tasker_status tasker_client_list_tasks(int32_t limit, int32_t offset, const char *namespace_name,
                                       const char *status, char **result_json);
/* DELETE /v1/tasks/{task_uuid}: {"cancelled": true (as upstream's bridge), "task": <the answer>}. */
tasker_status tasker_client_cancel_task(const char *task_uuid, char **result_json);
/* GET /v1/tasks/{task_uuid}/workflow_steps (a JSON array). */
tasker_status tasker_client_list_task_steps(const char *task_uuid, char **result_json);
/* GET /v1/tasks/{task_uuid}/workflow_steps/{step_uuid}. */
tasker_status tasker_client_get_step(const char *task_uuid, const char *step_uuid, char **result_json);
/* GET /v1/tasks/{task_uuid}/workflow_steps/{step_uuid}/audit (a JSON array). */
tasker_status tasker_client_get_step_audit_history(const char *task_uuid, const char *step_uuid,
                                                   char **result_json);

/* ---- Logging -------------------------------------------------------------------------------- */

typedef enum tasker_log_level {
    TASKER_LOG_TRACE = 0,
    TASKER_LOG_DEBUG = 1,
    TASKER_LOG_INFO = 2,
    TASKER_LOG_WARN = 3,
    TASKER_LOG_ERROR = 4
} tasker_log_level;

/* Writes `message` into the worker's log stream (same format and destination as the worker's own
 * lines) with `fields_json` (a JSON object of string values, or NULL) as metadata. Works before
 * bootstrap too (logs to stderr in text format). */
tasker_status tasker_log(int32_t level, const char *message, const char *fields_json);

#ifdef __cplusplus
}
#endif

#endif /* TASKER_WORKER_H */
