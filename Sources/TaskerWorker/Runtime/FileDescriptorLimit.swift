import TaskerHandlerSDK
import TaskerModel

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's open-file limit (`RLIMIT_NOFILE`) against what the worker may hold at once: every
/// REST and gRPC connection it accepts (`max_connections` of each server) and its database
/// connections. Containers often start processes with a soft limit of 1,024 under a much higher
/// hard limit; at boot the worker raises its soft limit to the hard one (as Go's runtime does), and
/// warns when even that is below what its configuration allows, since running out of descriptors
/// leaves clients unserved and database connects failing (retried, never fatal).
enum FileDescriptorLimit {
    /// Descriptors the configuration allows the worker to hold at once, plus a margin for the
    /// listeners, wake-up pipes, the LISTEN connection and files.
    package static func needed(by configuration: TaskerConfiguration) -> Int {
        let pool = configuration.common.database.pool.maxConnections
        // Each database connection holds its socket and a wake-up pipe (two descriptors).
        return configuration.worker.web.maxConnections + configuration.worker.grpc.maxConnections + 3 * (pool + 1) + 64
    }

    /// The soft limit now, raised to the hard limit first when it is lower (nil when unknown).
    static func raiseToHardLimit() -> Int? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return Int(clamping: limit.rlim_cur)  // RLIM_INFINITY (all bits set) clamps to Int.max
    }
}
