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
///
/// `tests/hosts/ruby_unload_host.rb` checks that the library stays mapped after the host drops
/// every handle to it.
enum LibraryPinning {
    /// Pins the library (idempotent; a failure only leaves unloading possible, so it is ignored).
    static func pin() {
        _ = pinned
    }

    private static let pinned: Bool = {
        guard let path = LibraryLocation.path else { return false }
        return dlopen(path, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE) != nil
    }()

    /// The file mapped at `address`, from `/proc/self/maps` (`dladdr` is not visible to Swift's
    /// Glibc module): lines `start-end perms offset dev inode path`, addresses in hex.
    ///
    /// Read line by line with `getline`: the file reports size 0, and Foundation's
    /// `String(contentsOfFile:)` returned only its first 4 KiB, which in a host with many
    /// libraries ends before this library's lines (so nothing was pinned, seen in the Ruby host).
    static func imagePath(containing address: UInt) -> String? {
        guard let file = fopen("/proc/self/maps", "r") else { return nil }
        defer { fclose(file) }
        var buffer: UnsafeMutablePointer<CChar>? = nil
        var capacity = 0
        defer { free(buffer) }
        while getline(&buffer, &capacity, file) > 0, let buffer {
            if let path = mappedPath(line: String(cString: buffer), containing: address) { return path }
        }
        return nil
    }

    /// The path of one `/proc/self/maps` line when its range contains `address`.
    static func mappedPath(line: String, containing address: UInt) -> String? {
        let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
        guard fields.count == 6 else { return nil }
        let range = fields[0].split(separator: "-")
        guard range.count == 2, let start = UInt(range[0], radix: 16), let end = UInt(range[1], radix: 16),
            (start..<end).contains(address)
        else { return nil }
        let path = fields[5].trimmingCharacters(in: .whitespacesAndNewlines)
        return path.hasPrefix("/") ? path : nil
    }
}

/// A function of this library whose address locates the library's file (``LibraryLocation/path``).
private func libraryAnchor() {}

extension LibraryLocation {
    /// This library's file, found by the address of one of its functions (`#dsohandle` lies in its
    /// data, which may be mapped without a path).
    static let path: String? = {
        let anchor: @convention(c) () -> Void = libraryAnchor
        return LibraryPinning.imagePath(containing: UInt(bitPattern: unsafeBitCast(anchor, to: UnsafeRawPointer.self)))
    }()
}
