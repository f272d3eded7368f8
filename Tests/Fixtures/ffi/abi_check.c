/* A C host of libTaskerWorkerFFI for FFILibraryTests: `errors` checks the ABI's error answers
 * without a worker; `lifecycle <config_json>` bootstraps, polls the one enqueued step, completes
 * it, calls every observability function, and stops. Prints one line per check:
 * `<name> <status> <text> | <last error>`. */
#include <stdio.h>
#include <string.h>
#include "tasker_worker.h"

/* Copies the 36-character UUID after `"<key>":"` in `json` into `out` (37 bytes). */
static int uuid_after(const char *json, const char *key, char *out) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
    const char *at = json ? strstr(json, pattern) : NULL;
    if (!at || strlen(at + strlen(pattern)) < 36) return 0;
    memcpy(out, at + strlen(pattern), 36);
    out[36] = '\0';
    return 1;
}

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
        char event_id[37] = "", step_uuid[37] = "", result[256];
        out = NULL;
        tasker_status polled = tasker_poll_step_event(20000, &out);
        int parsed = uuid_after(out, "event_id", event_id) && uuid_after(out, "step_uuid", step_uuid);
        printf("poll %d %s\n", (int)polled, parsed ? step_uuid : "(no event)");
        tasker_string_free(out);
        CALL("empty_poll", tasker_poll_step_event(0, &out));
        snprintf(result, sizeof result,
                 "{\"step_uuid\":\"%s\",\"success\":true,\"status\":\"completed\",\"result\":{\"from\":\"c\"}}", step_uuid);
        CALL("complete_mismatch", tasker_complete_step_event(event_id, "{\"step_uuid\":\"0192f3a4-0000-7000-8000-000000000000\"}"));
        CALL("complete", tasker_complete_step_event(event_id, result));
        CALL("complete_again", tasker_complete_step_event(event_id, result));
        CALL("complete_unknown", tasker_complete_step_event("0192f3a4-0000-7000-8000-000000000000", "{}"));
        CALL("checkpoint_bad", tasker_checkpoint_yield_step_event(event_id, "[]"));
        int32_t starving = -1;
        int64_t cleaned = -1;
        tasker_status starvation = tasker_check_starvation_warnings(&starving);
        printf("starvation %d %d\n", (int)starvation, starving);
        tasker_status cleanup = tasker_cleanup_timeouts(&cleaned);
        printf("cleanup %d %lld\n", (int)cleanup, (long long)cleaned);
        CALL("health", tasker_health(&out));
        CALL("metrics", tasker_metrics(&out));
        CALL("config", tasker_worker_config(&out));
        CALL("in_process_event", tasker_poll_in_process_event(10000, &out));
        CALL("no_more_events", tasker_poll_in_process_event(0, &out));
        CALL("begin_shutdown", tasker_worker_begin_shutdown(&out));
        CALL("stop", tasker_worker_stop(&out));
        tasker_worker_is_running(&running);
        printf("is_running %d\n", running);
        CALL("poll_after_stop", tasker_poll_step_event(0, &out));
        CALL("rebootstrap", tasker_worker_bootstrap(argv[2], &out));
        CALL("stop_again", tasker_worker_stop(&out));
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
