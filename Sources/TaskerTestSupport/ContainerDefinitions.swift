import Foundation
import Yams

// The repository's files as the tests read them, and the container's definition files among them
// (ContainerDefinitionTests in TaskerWorkerTests, ContainerFilesTests and ComposeRabbitMQProfileTests in
// TaskerSystemTests): the Dockerfile's instructions and stages, docker-compose.yml's services.

// MARK: - Repository

/// The repository's files, by their path relative to its root.
package enum Repo {
    package static var root: String { TestEnvironment.repositoryRoot }
    package static func path(_ relative: String) -> String { relative.isEmpty ? root : "\(root)/\(relative)" }
    package static func read(_ relative: String) throws -> String { try String(contentsOfFile: path(relative), encoding: .utf8) }
    package static func exists(_ relative: String) -> Bool { FileManager.default.fileExists(atPath: path(relative)) }
    /// `./a/b/` → `a/b`; `.` → "".
    package static func normalize(_ path: String) -> String {
        var parts = path.split(separator: "/").map(String.init).filter { $0 != "." && !$0.isEmpty }
        while parts.first == ".." { parts.removeFirst() }
        return parts.joined(separator: "/")
    }

    /// README's "Your first handler" package (`ReadmeWalkthroughTests`, `ReadmeExampleTests`).
    package static var firstHandlerExample: String { path("Examples/first-handler") }
}

// MARK: - Dockerfile

package struct DockerInstruction: Sendable {
    package let keyword: String
    package let arguments: String
    package let line: Int

    /// The JSON array of an exec-form instruction, or nil for shell form.
    package var execForm: [String]? {
        guard arguments.hasPrefix("["), let data = arguments.data(using: .utf8) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String]
    }

    /// Shell-like words: whitespace separated, single and double quotes group (and are removed).
    package static func words(_ text: String) -> [String] {
        var words: [String] = []
        var current = ""
        var quote: Character?
        var inWord = false
        var iterator = text.makeIterator()
        while let c = iterator.next() {
            if let q = quote {
                if c == q {
                    quote = nil
                } else if c == "\\" && q == "\"", let next = iterator.next() {
                    current.append(next)
                } else {
                    current.append(c)
                }
            } else if c == "\"" || c == "'" {
                quote = c
                inWord = true
            } else if c == "\\", let next = iterator.next() {
                current.append(next)
                inWord = true
            } else if c.isWhitespace {
                if inWord {
                    words.append(current)
                    current = ""
                    inWord = false
                }
            } else {
                current.append(c)
                inWord = true
            }
        }
        if inWord { words.append(current) }
        return words
    }

    /// `ENV A=1 B="x y"` (or the legacy `ENV A value`) as ordered pairs.
    package static func environment(_ instruction: DockerInstruction) -> [(String, String)] {
        let words = words(instruction.arguments)
        guard let first = words.first else { return [] }
        if !first.contains("=") { return [(first, words.dropFirst().joined(separator: " "))] }
        return words.compactMap { word in
            guard let eq = word.firstIndex(of: "=") else { return nil }
            return (String(word[..<eq]), String(word[word.index(after: eq)...]))
        }
    }

    /// `HEALTHCHECK [--opt=value...] CMD ...`: options and the command (exec form, or `sh -c` for shell form).
    package static func healthcheck(_ instruction: DockerInstruction) -> (options: [String: String], command: [String])? {
        var rest = Substring(instruction.arguments)
        var options: [String: String] = [:]
        while rest.hasPrefix("--") {
            let end = rest.firstIndex(where: \.isWhitespace) ?? rest.endIndex
            let option = rest[rest.index(rest.startIndex, offsetBy: 2)..<end]
            let parts = option.split(separator: "=", maxSplits: 1).map(String.init)
            options[parts[0]] = parts.count > 1 ? parts[1] : ""
            rest = rest[end...].drop(while: \.isWhitespace)
        }
        guard rest.hasPrefix("CMD") else { return nil }
        let command = String(rest.dropFirst(3).drop(while: \.isWhitespace))
        let probe = DockerInstruction(keyword: "CMD", arguments: command, line: instruction.line)
        return (options, probe.execForm ?? ["/bin/sh", "-c", command])
    }
}

package struct DockerCopy {
    package let from: String?
    package let sources: [String]
    package let destination: String
    package let line: Int
}

package struct DockerStage {
    package let base: String
    package let name: String?
    package var instructions: [DockerInstruction] = []

    package var copies: [DockerCopy] {
        instructions.filter { $0.keyword == "COPY" || $0.keyword == "ADD" }.map { instruction in
            var words = DockerInstruction.words(instruction.arguments)
            var from: String?
            while let flag = words.first, flag.hasPrefix("--") {
                if flag.hasPrefix("--from=") { from = String(flag.dropFirst("--from=".count)) }
                words.removeFirst()
            }
            if let exec = DockerInstruction(keyword: "COPY", arguments: words.joined(separator: " "), line: 0).execForm {
                words = exec
            }
            return DockerCopy(from: from, sources: Array(words.dropLast()), destination: words.last ?? "", line: instruction.line)
        }
    }

    package var environment: [(String, String)] {
        instructions.filter { $0.keyword == "ENV" }.flatMap(DockerInstruction.environment)
    }
}

package enum DockerfileParser {
    /// Instructions with line continuations (`\` at the end of a line) joined; comment lines (also inside
    /// a continuation) and blank lines dropped. Parser directives are comments here.
    package static func parse(_ text: String) -> [DockerInstruction] {
        var instructions: [DockerInstruction] = []
        var pending: String?
        var start = 0
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = raw.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("#") || (trimmed.isEmpty && pending == nil) { continue }
            if trimmed.isEmpty { continue }
            if pending == nil { start = index + 1 }
            var line = trimmed
            let continues = line.hasSuffix("\\")
            if continues { line = String(line.dropLast()).trimmingCharacters(in: .whitespaces) }
            pending = pending.map { $0 + " " + line } ?? line
            if !continues, let complete = pending {
                let keywordEnd = complete.firstIndex(where: \.isWhitespace) ?? complete.endIndex
                instructions.append(
                    DockerInstruction(
                        keyword: complete[..<keywordEnd].uppercased(),
                        arguments: complete[keywordEnd...].trimmingCharacters(in: .whitespaces), line: start))
                pending = nil
            }
        }
        return instructions
    }
}

package struct Dockerfile {
    package let stages: [DockerStage]

    package static func load() throws -> Dockerfile {
        var stages: [DockerStage] = []
        for instruction in DockerfileParser.parse(try Repo.read("Dockerfile")) {
            if instruction.keyword == "FROM" {
                let words = DockerInstruction.words(instruction.arguments).filter { !$0.hasPrefix("--") }
                let name = words.count >= 3 && words[1].lowercased() == "as" ? words[2] : nil
                stages.append(DockerStage(base: words.first ?? "", name: name))
            } else if !stages.isEmpty {
                stages[stages.count - 1].instructions.append(instruction)
            }
        }
        // Resolve `FROM ${ARG}` with the ARG defaults declared before the first FROM.
        let args = DockerfileParser.parse(try Repo.read("Dockerfile")).prefix { $0.keyword != "FROM" }
            .filter { $0.keyword == "ARG" }.flatMap(DockerInstruction.environment)
        let resolved = stages.map { stage in
            var base = stage.base
            for (name, value) in args { base = base.replacingOccurrences(of: "${\(name)}", with: value) }
            return DockerStage(base: base, name: stage.name, instructions: stage.instructions)
        }
        return Dockerfile(stages: resolved)
    }

    package var runtime: DockerStage { stages.last! }

    package var exposedPorts: Set<Int> {
        Set(
            runtime.instructions.filter { $0.keyword == "EXPOSE" }
                .flatMap { DockerInstruction.words($0.arguments) }
                .compactMap { Int($0.split(separator: "/")[0]) })
    }

    package var healthcheck: (options: [String: String], command: [String])? {
        runtime.instructions.last { $0.keyword == "HEALTHCHECK" }.flatMap(DockerInstruction.healthcheck)
    }
}

// MARK: - docker-compose.yml

package struct Compose {
    package let root: [String: Any]

    package static func load() throws -> Compose {
        let text = try Repo.read("docker-compose.yml")
        guard let root = try Yams.load(yaml: text) as? [String: Any] else { throw TestSetupError("compose: not a mapping") }
        return Compose(root: root)
    }

    package var services: [String: [String: Any]] { root["services"] as? [String: [String: Any]] ?? [:] }
    package func service(_ name: String) -> [String: Any]? { services[name] }

    /// Services that run this repository's worker image (they build the Dockerfile's default target;
    /// the `orchestration` service builds another target).
    package var workerServiceNames: [String] { services.filter { $0.value["build"] as? String == "." }.keys.sorted() }

    /// The services of a profile.
    package func services(inProfile profile: String) -> Set<String> {
        Set(services.filter { ($0.value["profiles"] as? [String])?.contains(profile) == true }.keys)
    }
}
