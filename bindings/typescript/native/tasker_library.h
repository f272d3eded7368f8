/*
 * tasker_library.h — the worker library as the addon sees it: the table of exposed functions
 * (tasker_worker.h's, with their C signatures and JavaScript names), the loaded library (dlopen +
 * dlsym per function), and one call of a function (arguments in, output and error out). No
 * Node-API here: calls run on any thread.
 */
#ifndef TASKER_ADDON_LIBRARY_H
#define TASKER_ADDON_LIBRARY_H

#ifndef NAPI_VERSION
#define NAPI_VERSION 8
#endif
#include <node_api.h> /* napi_deferred and napi_async_work of call_t (types only) */
#include <stddef.h>
#include <stdint.h>

typedef char *(*fn_last_error_t)(void);
typedef void (*fn_string_free_t)(char *);
typedef const char *(*fn_version_t)(void);

/* The C signatures of the exposed functions (each returns a tasker_status). */
typedef enum {
    SIG_OUT,        /* (char **out) */
    SIG_IN_OUT,     /* (const char *, char **out) */
    SIG_INT_OUT,    /* (int32_t, char **out) */
    SIG_IN_IN,      /* (const char *, const char *) */
    SIG_IN_IN_OUT,  /* (const char *, const char *, char **out) */
    SIG_I32P,       /* (int32_t *out) */
    SIG_I64P,       /* (int64_t *out) */
    SIG_LIST,       /* (int32_t, int32_t, const char *, const char *, char **out) */
    SIG_LOG         /* (int32_t, const char *, const char *) */
} signature_t;

typedef int32_t (*sig_out_t)(char **);
typedef int32_t (*sig_in_out_t)(const char *, char **);
typedef int32_t (*sig_int_out_t)(int32_t, char **);
typedef int32_t (*sig_in_in_t)(const char *, const char *);
typedef int32_t (*sig_in_in_out_t)(const char *, const char *, char **);
typedef int32_t (*sig_i32p_t)(int32_t *);
typedef int32_t (*sig_i64p_t)(int64_t *);
typedef int32_t (*sig_list_t)(int32_t, int32_t, const char *, const char *, char **);
typedef int32_t (*sig_log_t)(int32_t, const char *, const char *);

/* How the JavaScript value is made of the output. */
typedef enum { RES_STRING, RES_NULLABLE_STRING, RES_VOID, RES_BOOL, RES_NUMBER } result_kind_t;

#define MAX_ARGS 4

/* One exposed function. `args`: one letter per argument: 's' string, 'S' string or null/undefined
 * (passed as NULL), 'i' an integer in int32 range. */
typedef struct {
    const char *js_name;
    const char *symbol;
    signature_t signature;
    const char *args;
    const char *arg_names[MAX_ARGS];
    result_kind_t result;
    int is_async;
} entry_t;

extern const entry_t ENTRIES[];
extern const size_t ENTRY_COUNT;

/* The loaded library: set once by library_load, then only read. */
typedef struct {
    int loaded;
    char *path;
    void *handle;
    fn_last_error_t last_error;
    fn_string_free_t string_free;
    fn_version_t version;
    void **functions; /* by ENTRIES index; NULL where the library lacks the symbol */
} library_t;

extern library_t lib;

typedef struct {
    const entry_t *entry;
    void *fn;
    char *strings[MAX_ARGS]; /* by argument position; NULL for a null 'S' argument */
    int32_t ints[MAX_ARGS];
    int32_t status;
    char *out;    /* owned by the library: freed with tasker_string_free */
    int64_t number;
    char *error;  /* malloc'd copy of tasker_last_error() */
    napi_deferred deferred;
    napi_async_work work;
} call_t;

/* The name of a tasker_status ("TASKER_ERR_NOT_RUNNING", ...). */
const char *status_name(int32_t status);

/* Loads the library at `path` once (the same path again is a no-op). 0 on success, else -1 with a
 * message in `error`. */
int library_load(const char *path, char *error, size_t error_size);

/* 1 once library_load succeeded (an acquire load: the library's fields are then all visible). */
int library_is_loaded(void);

/* Runs the call's function; on failure `call->error` holds a copy of tasker_last_error(). */
void call_run(call_t *call);

/* Frees the call, its argument copies and its output. */
void call_free(call_t *call);

#endif
