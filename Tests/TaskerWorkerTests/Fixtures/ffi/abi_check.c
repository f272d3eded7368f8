/* A C host of libTaskerWorkerFFI for FFILibraryTests: `errors` checks the ABI's error answers
 * without a worker; `lifecycle <config_json>` bootstraps, reads status and metrics, polls once,
 * and stops. Prints one line per check: `<name> <status> <text>`. */
#include <stdio.h>
#include <string.h>
#include "tasker_worker.h"

static void report(const char *name, tasker_status status, char *text) {
    char *error = tasker_last_error();
    printf("%s %d %s | %s\n", name, (int)status, text ? text : "(null)", error ? error : "(no error)");
    tasker_string_free(error);
    tasker_string_free(text);
}

/* The call runs before its output is read (argument evaluation order is unspecified in C). */
#define CALL(name, expr)                   \
    do {                                   \
        out = NULL;                        \
        tasker_status status_ = (expr);    \
        report(name, status_, out);        \
    } while (0)

int main(int argc, char **argv) {
    printf("version %s\n", tasker_version());
    char *out = NULL;
    int32_t running = -1;
    if (argc > 1 && strcmp(argv[1], "lifecycle") == 0 && argc > 2) {
        CALL("bootstrap", tasker_worker_bootstrap(argv[2], &out));
        CALL("bootstrap_again", tasker_worker_bootstrap("{}", &out));
        tasker_worker_is_running(&running);
        printf("is_running %d\n", running);
        CALL("status", tasker_worker_status(&out));
        CALL("dispatch_metrics", tasker_ffi_dispatch_metrics(&out));
        CALL("poll", tasker_poll_step_event(50, &out));
        CALL("complete_unknown", tasker_complete_step_event("0192f3a4-0000-7000-8000-000000000000", "{}"));
        CALL("stop", tasker_worker_stop(&out));
        tasker_worker_is_running(&running);
        printf("is_running %d\n", running);
        CALL("poll_after_stop", tasker_poll_step_event(0, &out));
        return 0;
    }
    CALL("bad_json", tasker_worker_bootstrap("{bad", &out));
    CALL("unknown_key", tasker_worker_bootstrap("{\"bogus\":1}", &out));
    CALL("null_output", tasker_worker_bootstrap("{}", NULL));
    CALL("poll_before_bootstrap", tasker_poll_step_event(0, &out));
    CALL("complete_null", tasker_complete_step_event(NULL, "{}"));
    CALL("complete_before_bootstrap", tasker_complete_step_event("x", "{}"));
    CALL("stop_not_running", tasker_worker_stop(&out));
    tasker_worker_is_running(&running);
    printf("is_running %d\n", running);
    CALL("log", tasker_log(TASKER_LOG_INFO, "hello from C", "{\"lang\":\"c\"}"));
    CALL("log_bad_level", tasker_log(42, "x", NULL));
    return 0;
}
