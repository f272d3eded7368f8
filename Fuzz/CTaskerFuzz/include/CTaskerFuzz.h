#ifndef C_TASKER_FUZZ_H
#define C_TASKER_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/// One input: return 0 (libFuzzer's contract; -1 keeps the input out of the corpus).
typedef int (*tasker_fuzz_callback)(const uint8_t *data, size_t size);

/// Runs libFuzzer (`LLVMFuzzerRunDriver`) with the process's arguments: fuzzing, or running the
/// files and folders named on the command line once each. Returns libFuzzer's exit status.
int tasker_fuzz_run_driver(int *argc, char ***argv, tasker_fuzz_callback callback);

#endif
