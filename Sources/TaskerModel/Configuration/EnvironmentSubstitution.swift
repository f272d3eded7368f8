import Foundation
import TaskerStepModel
import TaskerText

/// `${VAR}` and `${VAR:-fallback}` expansion inside configuration strings.
///
/// Rules (tasker-core's config loader, with the differences noted):
/// - Only allow-listed variables are read, and a value must match the variable's pattern, else loading fails.
/// - `${VAR:-fallback}` uses the fallback when `VAR` is unset (a set-but-empty variable counts as set).
/// - An allow-listed `${VAR}` with no fallback and no value is an error naming the variable, the file and the key.
///   (tasker-core leaves the placeholder in and logs a warning.)
/// - A `${NAME}` whose name is not allow-listed is left exactly as written, with a warning; the environment
///   is never consulted for it. (tasker-core would apply its fallback, or panic when the variable is set.)
/// - Expansion happens on the parsed string values, not on the raw file text, so a value can never inject
///   TOML syntax and every error can name its key path. `${...}` therefore only works inside strings, which is
///   the only place the Tasker files use it.
struct EnvironmentSubstitution: Sendable {
    /// An allow-listed variable and the whole-value pattern its value must match.
    struct Variable: Sendable {
        let name: String
        let meaning: String
        let pattern: String
    }

    /// The allow-list. Patterns follow tasker-core's, except: database URLs accept `postgres://` as well as
    /// `postgresql://` and any well-formed rest (tasker-core insists on `user:password@` when a user is
    /// given); bind addresses also accept `[IPv6]:port`; `TASKER_ORCHESTRATION_BIND_ADDRESS` is ours; `REDIS_URL` and `MEMCACHED_URL` patterns are ours.
    static let allowList: [Variable] = [
        Variable(name: "DATABASE_URL", meaning: "a postgres:// or postgresql:// URL", pattern: #"postgres(ql)?://\S+"#),
        Variable(name: "PGMQ_DATABASE_URL", meaning: "empty or a postgres:// or postgresql:// URL", pattern: #"(postgres(ql)?://\S+)?"#),
        // Ours: `common.database.listen_url`, the direct URL of the LISTEN session behind a transaction pooler.
        Variable(
            name: "TASKER_LISTEN_DATABASE_URL", meaning: "empty or a postgres:// or postgresql:// URL", pattern: #"(postgres(ql)?://\S+)?"#),
        Variable(name: "TASKER_ENV", meaning: "test, development or production", pattern: "test|development|production"),
        Variable(name: "TASKER_CONFIG_PATH", meaning: "a path ending in .toml", pattern: #"[/\\]?[a-zA-Z0-9._/-]+\.toml"#),
        Variable(name: "TASKER_TEMPLATE_PATH", meaning: "a directory path", pattern: #"[/\\]?[a-zA-Z0-9._/-]+"#),
        Variable(name: "TASKER_WEB_BIND_ADDRESS", meaning: "host:port", pattern: bindAddressPattern),
        Variable(name: "TASKER_WORKER_GRPC_BIND_ADDRESS", meaning: "host:port", pattern: bindAddressPattern),
        // Ours: the orchestration's REST API (upstream's orchestration reads TASKER_WEB_BIND_ADDRESS, which
        // the worker started next to it by scripts/dev reads too).
        Variable(name: "TASKER_ORCHESTRATION_BIND_ADDRESS", meaning: "host:port", pattern: bindAddressPattern),
        Variable(name: "TASKER_MESSAGING_BACKEND", meaning: "pgmq or rabbitmq", pattern: "pgmq|rabbitmq"),
        Variable(
            name: "RABBITMQ_URL", meaning: "an amqp:// URL",
            pattern: #"amqps?://([a-zA-Z0-9_-]+:[^@]+@)?[a-zA-Z0-9._-]+(:[0-9]+)?(/[a-zA-Z0-9_%.-]*)?"#),
        Variable(name: "REDIS_URL", meaning: "a redis://, rediss:// or unix:// URL", pattern: #"(redis|rediss|unix)://\S+"#),
        Variable(name: "MEMCACHED_URL", meaning: "a tcp:// or unix:// URL", pattern: #"(tcp|unix)://\S+"#),
        Variable(name: "TASKER_INSTANCE_ID", meaning: "1-64 letters, digits or '-'", pattern: "[a-zA-Z0-9][a-zA-Z0-9-]{0,63}"),
        Variable(name: "TASKER_INSTANCE_PORT", meaning: "a port number", pattern: "[0-9]{1,5}"),
        Variable(name: "TASKER_WORKER_ID", meaning: "1-64 letters, digits or '-'", pattern: "[a-zA-Z0-9][a-zA-Z0-9-]{0,63}"),
        Variable(
            name: "TASKER_JWT_PUBLIC_KEY", meaning: "a PEM-encoded key",
            pattern: #"(?s)-----BEGIN [A-Z ]+KEY-----.*-----END [A-Z ]+KEY-----\s*"#),
        Variable(name: "TASKER_JWT_PUBLIC_KEY_PATH", meaning: "a path ending in .pem", pattern: #"[/\\]?[a-zA-Z0-9._/ \\-]+\.pem"#),
    ]

    static let bindAddressPattern = #"([0-9]{1,3}(\.[0-9]{1,3}){3}|[a-zA-Z0-9._-]+|\[[0-9a-fA-F:.]+\]):[0-9]{1,5}"#

    /// Names of the allow-listed variables, in allow-list order.
    static var allowedNames: [String] { allowList.map(\.name) }

    let environment: [String: String]

    /// Expands every string in `value` (recursively); problems are appended to `errors` / `warnings`.
    func apply(
        to value: ConfigValue, file: String, path: String,
        errors: inout [ConfigurationIssue], warnings: inout [ConfigurationIssue]
    ) -> ConfigValue {
        switch value {
        case .string(let s):
            return .string(expand(s, file: file, path: path, errors: &errors, warnings: &warnings))
        case .array(let items):
            return .array(
                items.enumerated().map { index, item in
                    apply(to: item, file: file, path: "\(path)[\(index)]", errors: &errors, warnings: &warnings)
                })
        case .table(let t):
            var out: [String: ConfigValue] = [:]
            for key in t.keys.sorted() {
                let child = path.isEmpty ? key : path + "." + key
                out[key] = apply(to: t[key]!, file: file, path: child, errors: &errors, warnings: &warnings)
            }
            return .table(out)
        default:
            return value
        }
    }

    /// Expands the `${...}` references of one string.
    func expand(
        _ text: String, file: String, path: String,
        errors: inout [ConfigurationIssue], warnings: inout [ConfigurationIssue]
    ) -> String {
        guard text.contains("${") else { return text }
        let shown = ConfigValue.string(Redaction.redactCredentials(text)).rendered
        var result = ""
        var rest = Substring(text)
        while let open = rest.range(of: "${") {
            result += rest[..<open.lowerBound]
            guard let close = rest[open.upperBound...].firstIndex(of: "}") else {
                rest = rest[open.lowerBound...]
                break
            }
            let expression = rest[open.upperBound..<close]
            let reference = String(rest[open.lowerBound...close])
            rest = rest[rest.index(after: close)...]

            let name: Substring
            let fallback: Substring?
            if let separator = expression.range(of: ":-") {
                name = expression[..<separator.lowerBound]
                fallback = expression[separator.upperBound...]
            } else {
                name = expression
                fallback = nil
            }
            guard let variable = Self.allowList.first(where: { $0.name == name }) else {
                warnings.append(
                    ConfigurationIssue(
                        file: file, keyPath: path, value: shown,
                        problem: "\(reference) left as written: '\(name)' is not an allow-listed variable (allowed: "
                            + Self.allowedNames.joined(separator: ", ") + ")"))
                result += reference
                continue
            }
            if let actual = environment[variable.name] {
                if Self.matches(actual, pattern: variable.pattern) {
                    result += actual
                } else {
                    errors.append(
                        ConfigurationIssue(
                            file: file, keyPath: path, value: shown,
                            problem: "environment variable \(variable.name) has an invalid value "
                                + "\(ConfigValue.string(Redaction.redactEnvironmentValue(actual, variable: variable.name)).rendered): "
                                + "must be \(variable.meaning)"))
                    result += reference
                }
            } else if let fallback {
                result += fallback
            } else {
                errors.append(
                    ConfigurationIssue(
                        file: file, keyPath: path, value: shown,
                        problem: "environment variable \(variable.name) is not set and \(reference) has no default "
                            + "(write ${\(variable.name):-default} to give one)"))
                result += reference
            }
        }
        return result + rest
    }

    /// Whether the whole of `value` matches `pattern`.
    static func matches(_ value: String, pattern: String) -> Bool {
        guard let regex = try? Regex(pattern) else { return false }
        return (try? regex.wholeMatch(in: value)) != nil
    }
}
