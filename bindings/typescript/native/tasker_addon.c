/*
 * tasker_addon.c — the Node-API addon of the TypeScript SDK.
 *
 * It loads libTaskerWorkerFFI.so at run time (`load(path)`: dlopen, then dlsym per function of
 * bindings/c/include/tasker_worker.h) and exposes each function to JavaScript under a camelCase
 * name. A symbol the library does not export (an older library without the orchestration client,
 * say) leaves the addon loadable: calling its function throws an Error with code
 * ERR_TASKER_SYMBOL_MISSING naming the symbol.
 *
 * Calls that may block (bootstrap, stop, polls with a timeout, completions, health, the
 * orchestration client) run on libuv's thread pool (napi_create_async_work) and return a Promise;
 * the others return their value directly. `tasker_last_error()` is per thread, so it is read on
 * the thread that made the failing call.
 *
 * Errors: a wrong argument type is a TypeError (a number out of int32 range a RangeError); a call
 * that returns anything but TASKER_OK rejects / throws an Error whose message is the library's
 * message, with `code` the status name (e.g. "TASKER_ERR_NOT_RUNNING") and `status` its number.
 * Output strings are copied into JavaScript strings and freed with tasker_string_free.
 */
#define NAPI_VERSION 8
#include <node_api.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tasker_library.h"

/* ---- Throwing ---------------------------------------------------------------------------- */

/* Throws an Error (kind 0), TypeError (1) or RangeError (2) with `code`, unless one is pending. */
static void throw_error(napi_env env, int kind, const char *code, const char *message) {
    bool pending = false;
    if (napi_is_exception_pending(env, &pending) == napi_ok && pending) return;
    switch (kind) {
    case 1: napi_throw_type_error(env, code, message); break;
    case 2: napi_throw_range_error(env, code, message); break;
    default: napi_throw_error(env, code, message); break;
    }
}

/* Checks a napi call; on failure throws (naming the call) and returns `ret`. */
#define NAPI_CHECK(env, call, ret)                                                               \
    do {                                                                                         \
        if ((call) != napi_ok) {                                                                 \
            throw_error((env), 0, "ERR_TASKER_NAPI", "Node-API call failed in the addon: " #call); \
            return ret;                                                                          \
        }                                                                                        \
    } while (0)

/* The Error for a failed library call: message "<function>: <library message>", `code` the status
 * name, `status` its number. NULL when even that could not be built. */
static napi_value status_error(napi_env env, const char *js_name, int32_t status, const char *message) {
    const char *name = status_name(status);
    const char *text = message ? message : "(the library gave no message)";
    size_t size = strlen(js_name) + strlen(text) + strlen(name) + 32;
    char *full = malloc(size);
    if (!full) return NULL;
    snprintf(full, size, "%s failed (%s): %s", js_name, name, text);
    napi_value code_value, message_value, error, status_value;
    napi_status ok = napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &code_value);
    if (ok == napi_ok) ok = napi_create_string_utf8(env, full, NAPI_AUTO_LENGTH, &message_value);
    free(full);
    if (ok == napi_ok) ok = napi_create_error(env, code_value, message_value, &error);
    if (ok == napi_ok) ok = napi_create_int32(env, status, &status_value);
    if (ok == napi_ok) ok = napi_set_named_property(env, error, "status", status_value);
    return ok == napi_ok ? error : NULL;
}

/* ---- One call ---------------------------------------------------------------------------- */

/* The JavaScript value of a successful call; NULL (with an exception pending) on failure. */
static napi_value call_value(napi_env env, call_t *call) {
    napi_value value;
    switch (call->entry->result) {
    case RES_STRING:
    case RES_NULLABLE_STRING:
        if (!call->out) {
            NAPI_CHECK(env, napi_get_null(env, &value), NULL);
        } else {
            NAPI_CHECK(env, napi_create_string_utf8(env, call->out, NAPI_AUTO_LENGTH, &value), NULL);
        }
        return value;
    case RES_BOOL: NAPI_CHECK(env, napi_get_boolean(env, call->number != 0, &value), NULL); return value;
    case RES_NUMBER: NAPI_CHECK(env, napi_create_double(env, (double)call->number, &value), NULL); return value;
    case RES_VOID: default: NAPI_CHECK(env, napi_get_undefined(env, &value), NULL); return value;
    }
}

/* Reads one string argument into a malloc'd copy; 0 and a pending TypeError on failure. */
static int read_string(napi_env env, napi_value value, const entry_t *entry, int index, char **out) {
    size_t length = 0, copied = 0;
    NAPI_CHECK(env, napi_get_value_string_utf8(env, value, NULL, 0, &length), 0);
    char *buffer = malloc(length + 1);
    if (!buffer) {
        throw_error(env, 0, "ERR_TASKER_MEMORY", "out of memory copying a string argument");
        return 0;
    }
    if (napi_get_value_string_utf8(env, value, buffer, length + 1, &copied) != napi_ok) {
        free(buffer);
        throw_error(env, 0, "ERR_TASKER_NAPI", "Node-API call failed in the addon: napi_get_value_string_utf8");
        return 0;
    }
    if (strlen(buffer) != copied) {
        char message[256];
        snprintf(message, sizeof message, "%s: argument %s contains a NUL character", entry->js_name,
                 entry->arg_names[index]);
        free(buffer);
        throw_error(env, 1, "ERR_INVALID_ARG_VALUE", message);
        return 0;
    }
    *out = buffer;
    return 1;
}

/* Checks and copies the arguments into `call`; 0 and a pending exception on failure. */
static int read_arguments(napi_env env, napi_callback_info info, const entry_t *entry, call_t *call) {
    size_t argc = MAX_ARGS;
    napi_value argv[MAX_ARGS];
    NAPI_CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL), 0);
    size_t wanted = strlen(entry->args);
    char message[320];
    for (size_t i = 0; i < wanted; i++) {
        char kind = entry->args[i];
        napi_valuetype type = napi_undefined;
        if (i < argc) NAPI_CHECK(env, napi_typeof(env, argv[i], &type), 0);
        if (kind == 'S' && (type == napi_undefined || type == napi_null)) continue;
        if (kind == 's' || kind == 'S') {
            if (type != napi_string) {
                snprintf(message, sizeof message, "%s: argument %s must be a string%s", entry->js_name,
                         entry->arg_names[i], kind == 'S' ? " or null" : "");
                throw_error(env, 1, "ERR_INVALID_ARG_TYPE", message);
                return 0;
            }
            if (!read_string(env, argv[i], entry, (int)i, &call->strings[i])) return 0;
        } else if (kind == 'i') {
            double number = 0;
            if (type != napi_number) {
                snprintf(message, sizeof message, "%s: argument %s must be a number", entry->js_name,
                         entry->arg_names[i]);
                throw_error(env, 1, "ERR_INVALID_ARG_TYPE", message);
                return 0;
            }
            NAPI_CHECK(env, napi_get_value_double(env, argv[i], &number), 0);
            if (!isfinite(number) || number != floor(number) || number < INT32_MIN || number > INT32_MAX) {
                snprintf(message, sizeof message, "%s: argument %s must be an integer in int32 range", entry->js_name,
                         entry->arg_names[i]);
                throw_error(env, 2, "ERR_OUT_OF_RANGE", message);
                return 0;
            }
            call->ints[i] = (int32_t)number;
        }
    }
    return 1;
}

/* ---- Asynchronous calls ------------------------------------------------------------------ */

static void async_execute(napi_env env, void *data) {
    (void)env;
    call_run((call_t *)data);
}

/* Rejects `deferred` with `reason`; when `reason` is NULL (building the error failed) with the
 * pending exception, else a plain Error, else undefined: a promise is always settled (an unsettled
 * one would hang its awaiter forever and leak the deferred's reference). When even rejecting fails
 * the environment is shutting down and takes the deferred with it. */
static void reject_with(napi_env env, napi_deferred deferred, napi_value reason) {
    if (!reason) {
        bool pending = false;
        napi_value message;
        if (!(napi_is_exception_pending(env, &pending) == napi_ok && pending &&
              napi_get_and_clear_last_exception(env, &reason) == napi_ok && reason) &&
            !(napi_create_string_utf8(env, "the addon could not build the error of a failed call", NAPI_AUTO_LENGTH,
                                      &message) == napi_ok &&
              napi_create_error(env, NULL, message, &reason) == napi_ok) &&
            napi_get_undefined(env, &reason) != napi_ok) {
            return;
        }
    }
    napi_reject_deferred(env, deferred, reason);
}

/* Settles the call's promise and frees the call and its work on every path. */
static void async_complete(napi_env env, napi_status status, void *data) {
    call_t *call = data;
    napi_value value = NULL;
    if (status == napi_cancelled) {
        napi_value code, message;
        if (!(napi_create_string_utf8(env, "ERR_TASKER_CANCELLED", NAPI_AUTO_LENGTH, &code) == napi_ok &&
              napi_create_string_utf8(env, "the call was cancelled", NAPI_AUTO_LENGTH, &message) == napi_ok &&
              napi_create_error(env, code, message, &value) == napi_ok)) {
            value = NULL;
        }
        reject_with(env, call->deferred, value);
    } else if (call->status != 0) {
        reject_with(env, call->deferred, status_error(env, call->entry->js_name, call->status, call->error));
    } else {
        value = call_value(env, call);
        /* NULL: the output could not become a string (too large): reject with that exception. */
        if (!value || napi_resolve_deferred(env, call->deferred, value) != napi_ok) reject_with(env, call->deferred, NULL);
    }
    napi_delete_async_work(env, call->work);
    call_free(call);
}

/* ---- The exposed functions --------------------------------------------------------------- */

/* Every exposed function: `data` is its entry. */
static napi_value dispatch(napi_env env, napi_callback_info info) {
    void *data = NULL;
    NAPI_CHECK(env, napi_get_cb_info(env, info, NULL, NULL, NULL, &data), NULL);
    const entry_t *entry = data;
    size_t index = (size_t)(entry - ENTRIES);
    char message[512];
    if (!library_is_loaded()) {
        snprintf(message, sizeof message,
                 "%s: the Tasker worker library is not loaded (call load(path) first)", entry->js_name);
        throw_error(env, 0, "ERR_TASKER_NOT_LOADED", message);
        return NULL;
    }
    if (!lib.functions[index]) {
        snprintf(message, sizeof message,
                 "%s: %s is not exported by %s (the library predates it: a newer libTaskerWorkerFFI.so is needed)",
                 entry->js_name, entry->symbol, lib.path);
        throw_error(env, 0, "ERR_TASKER_SYMBOL_MISSING", message);
        return NULL;
    }
    call_t *call = calloc(1, sizeof *call);
    if (!call) {
        throw_error(env, 0, "ERR_TASKER_MEMORY", "out of memory");
        return NULL;
    }
    call->entry = entry;
    call->fn = lib.functions[index];
    if (!read_arguments(env, info, entry, call)) {
        call_free(call);
        return NULL;
    }
    if (!entry->is_async) {
        call_run(call);
        napi_value value = NULL;
        if (call->status != 0) {
            napi_value error = status_error(env, entry->js_name, call->status, call->error);
            if (error) napi_throw(env, error);
            else throw_error(env, 0, "ERR_TASKER_NAPI", "could not build the error of a failed call");
        } else {
            value = call_value(env, call);
        }
        call_free(call);
        return value;
    }
    napi_value promise, resource_name;
    if (napi_create_promise(env, &call->deferred, &promise) != napi_ok) {
        call_free(call);
        throw_error(env, 0, "ERR_TASKER_NAPI", "could not create the promise of an asynchronous call");
        return NULL;
    }
    const char *failure = NULL;
    if (napi_create_string_utf8(env, entry->js_name, NAPI_AUTO_LENGTH, &resource_name) != napi_ok ||
        napi_create_async_work(env, NULL, resource_name, async_execute, async_complete, call, &call->work) != napi_ok) {
        call->work = NULL;
        failure = "could not start an asynchronous call";
    } else if (napi_queue_async_work(env, call->work) != napi_ok) {
        failure = "could not queue an asynchronous call";
    }
    if (failure) {
        /* The promise exists: reject it (settling releases the deferred) rather than leak it. */
        if (call->work) napi_delete_async_work(env, call->work);
        napi_deferred deferred = call->deferred;
        call_free(call);
        throw_error(env, 0, "ERR_TASKER_NAPI", failure);
        reject_with(env, deferred, NULL); /* takes the pending exception */
    }
    return promise;
}

/* load(path): dlopen the library once; returns its version. Loading another path afterwards is an
 * error; loading the same path again is a no-op. */
static napi_value load(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1];
    napi_valuetype type = napi_undefined;
    NAPI_CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL), NULL);
    if (argc >= 1) NAPI_CHECK(env, napi_typeof(env, argv[0], &type), NULL);
    if (type != napi_string) {
        throw_error(env, 1, "ERR_INVALID_ARG_TYPE", "load: argument path must be a string");
        return NULL;
    }
    static const entry_t load_entry = {"load", "", SIG_OUT, "s", {"path"}, RES_STRING, 0};
    char *path = NULL;
    if (!read_string(env, argv[0], &load_entry, 0, &path)) return NULL;
    char message[1024];
    int failed = library_load(path, message, sizeof message);
    free(path);
    if (failed) {
        throw_error(env, 0, strstr(message, "already loaded") ? "ERR_TASKER_ALREADY_LOADED" : "ERR_TASKER_LOAD", message);
        return NULL;
    }
    napi_value result;
    const char *version = lib.version();
    NAPI_CHECK(env, napi_create_string_utf8(env, version ? version : "", NAPI_AUTO_LENGTH, &result), NULL);
    return result;
}

/* symbols(): {"<jsName>": true|false} — which functions the loaded library exports. */
static napi_value symbols(napi_env env, napi_callback_info info) {
    (void)info;
    napi_value result, flag;
    NAPI_CHECK(env, napi_create_object(env, &result), NULL);
    for (size_t i = 0; i < ENTRY_COUNT; i++) {
        NAPI_CHECK(env, napi_get_boolean(env, library_is_loaded() && lib.functions[i] != NULL, &flag), NULL);
        NAPI_CHECK(env, napi_set_named_property(env, result, ENTRIES[i].js_name, flag), NULL);
    }
    return result;
}

/* loadedPath(): the loaded library's path, or null. */
static napi_value loaded_path(napi_env env, napi_callback_info info) {
    (void)info;
    napi_value result;
    if (!library_is_loaded()) {
        NAPI_CHECK(env, napi_get_null(env, &result), NULL);
    } else {
        NAPI_CHECK(env, napi_create_string_utf8(env, lib.path, NAPI_AUTO_LENGTH, &result), NULL);
    }
    return result;
}

NAPI_MODULE_INIT() {
    napi_value fn;
    NAPI_CHECK(env, napi_create_function(env, "load", NAPI_AUTO_LENGTH, load, NULL, &fn), NULL);
    NAPI_CHECK(env, napi_set_named_property(env, exports, "load", fn), NULL);
    NAPI_CHECK(env, napi_create_function(env, "symbols", NAPI_AUTO_LENGTH, symbols, NULL, &fn), NULL);
    NAPI_CHECK(env, napi_set_named_property(env, exports, "symbols", fn), NULL);
    NAPI_CHECK(env, napi_create_function(env, "loadedPath", NAPI_AUTO_LENGTH, loaded_path, NULL, &fn), NULL);
    NAPI_CHECK(env, napi_set_named_property(env, exports, "loadedPath", fn), NULL);
    for (size_t i = 0; i < ENTRY_COUNT; i++) {
        NAPI_CHECK(env, napi_create_function(env, ENTRIES[i].js_name, NAPI_AUTO_LENGTH, dispatch,
                                             (void *)&ENTRIES[i], &fn), NULL);
        NAPI_CHECK(env, napi_set_named_property(env, exports, ENTRIES[i].js_name, fn), NULL);
    }
    return exports;
}
