#if DEBUG
import Foundation

@testable import TaskerModel

/// `worker.toml` (`TASKER_CONFIG_PATH`, a mounted file) → `ConfigurationLoader.load(file:)`: the
/// `TOMLPreflight` scan, TOMLKit (toml++), `${VAR}` expansion, validation, decoding. Contract: every
/// refusal is a `ConfigurationLoadError` naming the file; text the preflight refuses never reaches
/// toml++ (the load fails with the preflight's position); a file that loads loads the same again.
public enum WorkerConfigCheck {
    static let file = ScratchFile(name: "worker.toml")
    static let loader = ConfigurationLoader(environment: ["TASKER_FUZZ_SET": "value"], configRoot: "/nonexistent")

    /// Checks one input against the contract above.
    public static func check(_ bytes: [UInt8]) {
        file.write(bytes)
        let text = String(decoding: bytes, as: UTF8.self)
        let preflight = TOMLPreflight.check(text)
        let loaded: LoadedConfiguration
        do throws(ConfigurationLoadError) {
            loaded = try loader.load(file: file.path)
        } catch {
            FuzzContract.require(!error.issues.isEmpty, "a refusal without an issue")
            if let preflight, String(bytes: bytes, encoding: .utf8) != nil {
                let expected = "invalid TOML at line \(preflight.line), column \(preflight.column)"
                FuzzContract.require(
                    error.issues.contains { $0.problem.hasPrefix(expected) }, "the preflight's \(preflight) not reported")
            }
            return
        }
        FuzzContract.require(preflight == nil, "the preflight refused \(String(describing: preflight)) and the file loaded")
        let again = try? loader.load(file: file.path)
        FuzzContract.require(again?.configuration == loaded.configuration, "the same file loads differently")
    }
}
#endif
