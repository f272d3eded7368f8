/*
 * tasker_library.c — loading libTaskerWorkerFFI.so and calling its functions (see tasker_library.h).
 */
#include "tasker_library.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const entry_t ENTRIES[] = {    {"bootstrap", "tasker_worker_bootstrap", SIG_IN_OUT, "S", {"configJson"}, RES_STRING, 1},
    {"stop", "tasker_worker_stop", SIG_OUT, "", {0}, RES_STRING, 1},
    {"beginShutdown", "tasker_worker_begin_shutdown", SIG_OUT, "", {0}, RES_STRING, 0},
    {"workerStatus", "tasker_worker_status", SIG_OUT, "", {0}, RES_STRING, 0},
    {"isRunning", "tasker_worker_is_running", SIG_I32P, "", {0}, RES_BOOL, 0},
    {"pollStepEvent", "tasker_poll_step_event", SIG_INT_OUT, "i", {"timeoutMs"}, RES_NULLABLE_STRING, 1},
    {"completeStepEvent", "tasker_complete_step_event", SIG_IN_IN, "ss", {"eventId", "resultJson"}, RES_VOID, 1},
    {"checkpointYieldStepEvent", "tasker_checkpoint_yield_step_event", SIG_IN_IN, "ss",
     {"eventId", "checkpointJson"}, RES_VOID, 1},
    {"ffiDispatchMetrics", "tasker_ffi_dispatch_metrics", SIG_OUT, "", {0}, RES_STRING, 0},
    {"checkStarvationWarnings", "tasker_check_starvation_warnings", SIG_I32P, "", {0}, RES_NUMBER, 0},
    {"cleanupTimeouts", "tasker_cleanup_timeouts", SIG_I64P, "", {0}, RES_NUMBER, 0},
    {"pollInProcessEvent", "tasker_poll_in_process_event", SIG_INT_OUT, "i", {"timeoutMs"}, RES_NULLABLE_STRING, 1},
    {"health", "tasker_health", SIG_OUT, "", {0}, RES_STRING, 1},
    {"metrics", "tasker_metrics", SIG_OUT, "", {0}, RES_STRING, 1},
    {"workerConfig", "tasker_worker_config", SIG_OUT, "", {0}, RES_STRING, 1},
    {"log", "tasker_log", SIG_LOG, "isS", {"level", "message", "fieldsJson"}, RES_VOID, 0},
    {"clientHealthCheck", "tasker_client_health_check", SIG_OUT, "", {0}, RES_STRING, 1},
    {"clientCreateTask", "tasker_client_create_task", SIG_IN_OUT, "s", {"requestJson"}, RES_STRING, 1},
    {"clientGetTask", "tasker_client_get_task", SIG_IN_OUT, "s", {"taskUuid"}, RES_STRING, 1},
    {"clientListTasks", "tasker_client_list_tasks", SIG_LIST, "iiSS", {"limit", "offset", "namespace", "status"},
     RES_STRING, 1},
    {"clientCancelTask", "tasker_client_cancel_task", SIG_IN_OUT, "s", {"taskUuid"}, RES_STRING, 1},
    {"clientListTaskSteps", "tasker_client_list_task_steps", SIG_IN_OUT, "s", {"taskUuid"}, RES_STRING, 1},
    {"clientGetStep", "tasker_client_get_step", SIG_IN_IN_OUT, "ss", {"taskUuid", "stepUuid"}, RES_STRING, 1},
    {"clientGetStepAuditHistory", "tasker_client_get_step_audit_history", SIG_IN_IN_OUT, "ss",
     {"taskUuid", "stepUuid"}, RES_STRING, 1},
};
const size_t ENTRY_COUNT = sizeof(ENTRIES) / sizeof(ENTRIES[0]);

static void *functions[sizeof(ENTRIES) / sizeof(ENTRIES[0])];
library_t lib = {0, NULL, NULL, NULL, NULL, NULL, functions};
static pthread_mutex_t lib_mutex = PTHREAD_MUTEX_INITIALIZER;

const char *status_name(int32_t status) {
    switch (status) {
    case 0: return "TASKER_OK";
    case 1: return "TASKER_ERR_INVALID_ARGUMENT";
    case 2: return "TASKER_ERR_NOT_RUNNING";
    case 3: return "TASKER_ERR_ALREADY_RUNNING";
    case 4: return "TASKER_ERR_UNKNOWN_EVENT";
    case 5: return "TASKER_ERR_BOOTSTRAP";
    case 6: return "TASKER_ERR_REFUSED";
    case 7: return "TASKER_ERR_CLIENT";
    case 99: return "TASKER_ERR_INTERNAL";
    default: return "TASKER_ERR_UNKNOWN_STATUS";
    }
}

int library_is_loaded(void) {
    return __atomic_load_n(&lib.loaded, __ATOMIC_ACQUIRE);
}

int library_load(const char *path, char *error, size_t error_size) {
    int result = 0;
    pthread_mutex_lock(&lib_mutex);
    if (lib.loaded) {
        if (strcmp(lib.path, path) != 0) {
            snprintf(error, error_size, "load: %s is already loaded; cannot load %s as well", lib.path, path);
            result = -1;
        }
        pthread_mutex_unlock(&lib_mutex);
        return result;
    }
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *reason = dlerror();
        snprintf(error, error_size, "load: cannot load %s: %s", path, reason ? reason : "unknown error");
        pthread_mutex_unlock(&lib_mutex);
        return -1;
    }
    fn_last_error_t last_error = (fn_last_error_t)dlsym(handle, "tasker_last_error");
    fn_string_free_t string_free = (fn_string_free_t)dlsym(handle, "tasker_string_free");
    fn_version_t version = (fn_version_t)dlsym(handle, "tasker_version");
    char *copy = strdup(path);
    if (!last_error || !string_free || !version || !copy) {
        dlclose(handle);
        free(copy);
        snprintf(error, error_size,
                 "load: %s is not a Tasker worker library (no tasker_last_error, tasker_string_free or "
                 "tasker_version)", path);
        pthread_mutex_unlock(&lib_mutex);
        return -1;
    }
    for (size_t i = 0; i < ENTRY_COUNT; i++) lib.functions[i] = dlsym(handle, ENTRIES[i].symbol);
    lib.handle = handle;
    lib.path = copy;
    lib.last_error = last_error;
    lib.string_free = string_free;
    lib.version = version;
    /* Release: a thread that sees loaded == 1 (library_is_loaded) sees every field above. */
    __atomic_store_n(&lib.loaded, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&lib_mutex);
    return 0;
}

void call_free(call_t *call) {
    if (!call) return;
    for (int i = 0; i < MAX_ARGS; i++) free(call->strings[i]);
    if (call->out) lib.string_free(call->out);
    free(call->error);
    free(call);
}

/* Runs the library function (any thread; no Node-API here). */
void call_run(call_t *call) {
    char **s = call->strings;
    int32_t *n = call->ints;
    int32_t i32 = 0;
    switch (call->entry->signature) {
    case SIG_OUT: call->status = ((sig_out_t)call->fn)(&call->out); break;
    case SIG_IN_OUT: call->status = ((sig_in_out_t)call->fn)(s[0], &call->out); break;
    case SIG_INT_OUT: call->status = ((sig_int_out_t)call->fn)(n[0], &call->out); break;
    case SIG_IN_IN: call->status = ((sig_in_in_t)call->fn)(s[0], s[1]); break;
    case SIG_IN_IN_OUT: call->status = ((sig_in_in_out_t)call->fn)(s[0], s[1], &call->out); break;
    case SIG_I32P:
        call->status = ((sig_i32p_t)call->fn)(&i32);
        call->number = i32;
        break;
    case SIG_I64P: call->status = ((sig_i64p_t)call->fn)(&call->number); break;
    case SIG_LIST: call->status = ((sig_list_t)call->fn)(n[0], n[1], s[2], s[3], &call->out); break;
    case SIG_LOG: call->status = ((sig_log_t)call->fn)(n[0], s[1], s[2]); break;
    }
    if (call->status != 0) {
        char *message = lib.last_error();
        call->error = strdup(message ? message : "(the library gave no message)");
        lib.string_free(message);
        if (call->out) {
            lib.string_free(call->out);
            call->out = NULL;
        }
    }
}

