import Foundation

/// Where this library was loaded from, and the configuration tree that comes with it.
enum LibraryLocation {
    /// The directory holding `libTaskerWorkerFFI.so` (``path``, in `LibraryPinning.swift`), or nil.
    static let directory: URL? = path.map { URL(fileURLWithPath: $0).resolvingSymlinksInPath().deletingLastPathComponent() }

    /// The configuration tree (`base/`, `environments/`) nearest the library: `config/tasker` of the
    /// checkout whose `.build` holds it, or `config/` beside a packaged copy (a wheel's `lib/../config`);
    /// nil when neither is within five directories up.
    static let configurationRoot: String? = {
        var directory = LibraryLocation.directory
        for _ in 0..<6 {
            guard let current = directory else { return nil }
            for candidate in ["config/tasker", "config"] {
                let root = current.appendingPathComponent(candidate)
                if FileManager.default.fileExists(atPath: root.appendingPathComponent("base/worker.toml").path) { return root.path }
            }
            directory = current.deletingLastPathComponent()
        }
        return nil
    }()
}
