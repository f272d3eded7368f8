#include "CTaskerFuzz.h"

// libFuzzer's entry for programs that have their own main (libclang_rt.fuzzer, linked by -sanitize=fuzzer).
extern int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

int tasker_fuzz_run_driver(int *argc, char ***argv, tasker_fuzz_callback callback) {
    return LLVMFuzzerRunDriver(argc, argv, callback);
}
