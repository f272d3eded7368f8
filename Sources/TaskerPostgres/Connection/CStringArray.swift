#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Builds NULL-terminated arrays of C strings for libpq calls, freeing them afterwards.
enum CStringArray {
    static func with<R>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        withOptional(strings.map { Optional($0) }) { pointers in
            body(pointers + [nil])
        }
    }

    /// `nil` entries stay NULL pointers (SQL NULL parameters).
    static func withOptional<R>(_ strings: [String?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        let owned: [UnsafeMutablePointer<CChar>?] = strings.map { $0.map { strdup($0) } }
        defer { owned.forEach { free($0) } }
        return body(owned.map { UnsafePointer($0) })
    }
}
