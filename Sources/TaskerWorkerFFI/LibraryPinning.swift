import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Keeps this library mapped until the process exits, once a worker has been bootstrapped.
///
/// The embedded worker runs threads of its own (one per database connection, SwiftNIO's event
/// loops, the Swift concurrency pool) that may still be finishing work, or parked inside this
/// library's code, after `tasker_worker_stop` returns. A host that unloads the library
/// (`dlclose`; Ruby's ffi does so for every library at interpreter exit) would unmap that code
/// under them and the process would die of SIGSEGV on its way out (seen: the Ruby example host).
/// `dlopen(…, RTLD_NOLOAD | RTLD_NODELETE)` on the already loaded library marks it as never to be
/// unloaded, which is what a runtime with threads needs (as, for example, Go's c-shared libraries).
enum LibraryPinning {
    /// Pins the library (idempotent; a failure only leaves unloading possible, so it is ignored).
    static func pin() {
        _ = pinned
    }

    private static let pinned: Bool = {
        guard let path = imagePath(containing: UInt(bitPattern: #dsohandle)) else { return false }
        return dlopen(path, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE) != nil
    }()

    /// The file mapped at `address`, from `/proc/self/maps` (`dladdr` is not visible to Swift's
    /// Glibc module): lines `start-end perms offset dev inode path`, addresses in hex.
    static func imagePath(containing address: UInt) -> String? {
        guard let maps = try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8) else { return nil }
        for line in maps.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count == 6 else { continue }
            let range = fields[0].split(separator: "-")
            guard range.count == 2, let start = UInt(range[0], radix: 16), let end = UInt(range[1], radix: 16),
                (start..<end).contains(address)
            else { continue }
            let path = fields[5].trimmingCharacters(in: .whitespaces)
            return path.hasPrefix("/") ? path : nil
        }
        return nil
    }
}
