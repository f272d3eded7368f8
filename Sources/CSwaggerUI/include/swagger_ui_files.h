#ifndef TASKER_SWAGGER_UI_FILES_H
#define TASKER_SWAGGER_UI_FILES_H

// Swagger UI's files, embedded in the binary (Sources/CSwaggerUI/files, vendored by
// scripts/vendor-swagger-ui; served by the worker under /api-docs/ui/).

#include <stddef.h>

// Hidden: linked into each binary that uses it, never exported (libTaskerWorkerFFI.so's ABI stays
// bindings/c/include/tasker_worker.h).
#define TASKER_SWAGGER_UI_INTERNAL __attribute__((visibility("hidden")))

/// One embedded file: its name (as requested under /api-docs/ui/), the SHA-256 of its bytes in hex,
/// and the bytes themselves (read-only, valid for the life of the process).
typedef struct tasker_swagger_ui_file {
    const char *name;
    const char *sha256;
    const unsigned char *bytes;
    size_t length;
} tasker_swagger_ui_file;

/// The version of Swagger UI embedded ("5.17.14").
TASKER_SWAGGER_UI_INTERNAL const char *tasker_swagger_ui_version(void);

/// How many files are embedded.
TASKER_SWAGGER_UI_INTERNAL size_t tasker_swagger_ui_file_count(void);

/// The file at `index` (< tasker_swagger_ui_file_count()); all fields zero for an index out of range.
TASKER_SWAGGER_UI_INTERNAL tasker_swagger_ui_file tasker_swagger_ui_file_at(size_t index);

#endif
