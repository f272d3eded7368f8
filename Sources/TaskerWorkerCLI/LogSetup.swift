import TaskerWorker

/// Process-wide logging: `WorkerLogging` lines on stderr at `TASKER_LOG_LEVEL` (default `info`),
/// text or JSON (`TASKER_LOG_FORMAT=json`). Idempotent; the launcher adds `worker_id` later.
enum LogSetup {
    static func bootstrap() {
        WorkerLogging.bootstrap()
    }
}
