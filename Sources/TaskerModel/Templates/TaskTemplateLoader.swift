import Foundation
import TaskerStepModel

/// A template read from a file.
public struct LoadedTemplate: Sendable, Equatable {
    /// The file, as shown in messages.
    public var file: String
    public var template: TaskTemplate

    public init(file: String, template: TaskTemplate) {
        self.file = file
        self.template = template
    }
}

/// What `TaskTemplateLoader.loadAll()` found.
public struct TemplateLoadReport: Sendable, Equatable {
    /// The directory searched; nil when none of the candidates exists.
    public var directory: String?
    /// Valid templates, in file order.
    public var templates: [LoadedTemplate]
    /// One entry per problem; a file with problems contributes no template.
    public var problems: [TemplateProblem]

    public init(directory: String? = nil, templates: [LoadedTemplate] = [], problems: [TemplateProblem] = []) {
        self.directory = directory
        self.templates = templates
        self.problems = problems
    }

    /// Distinct namespaces of the valid templates, sorted.
    public var namespaces: [String] { Array(Set(templates.map(\.template.namespaceName))).sorted() }
}

/// Finds and reads the template files a worker registers at boot.
///
/// The directory is the first existing one of `TASKER_TEMPLATE_PATH`, `$WORKSPACE_PATH/config/tasks`
/// and `./config/tasks`. Every `*.yml`/`*.yaml` below it (recursively) holds one template. A file that
/// does not parse or validate is reported in `problems` and skipped; the others still load.
public struct TaskTemplateLoader: Sendable {
    public var environment: [String: String]
    public var workingDirectory: String

    public init(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        workingDirectory: String = FileManager.default.currentDirectoryPath
    ) {
        self.environment = environment
        self.workingDirectory = workingDirectory
    }

    /// The candidate directories, in order of precedence.
    public func candidateDirectories() -> [String] {
        var candidates: [String] = []
        if let path = environment["TASKER_TEMPLATE_PATH"], !path.isEmpty { candidates.append(absolute(path)) }
        if let workspace = environment["WORKSPACE_PATH"], !workspace.isEmpty {
            candidates.append(absolute((workspace as NSString).appendingPathComponent("config/tasks")))
        }
        candidates.append(absolute("config/tasks"))
        return candidates
    }

    /// The first candidate that exists, or nil.
    public func templateDirectory() -> String? {
        candidateDirectories().first { FileManager.default.fileExists(atPath: $0) }
    }

    /// Reads every template file of `templateDirectory()`.
    public func loadAll() -> TemplateLoadReport {
        guard let directory = templateDirectory() else { return TemplateLoadReport() }
        return load(directory: directory)
    }

    /// Reads every template file below `directory` (or the file itself).
    public func load(directory: String) -> TemplateLoadReport {
        var report = TemplateLoadReport(directory: directory)
        var owners: [String: String] = [:]  // identifier -> file
        for path in Self.yamlFiles(under: directory) {
            switch loadFile(atPath: path) {
            case .success(let loaded):
                let key = loaded.template.identifier
                if let first = owners[key] {
                    report.problems.append(
                        TemplateProblem(
                            file: loaded.file, template: key,
                            message: "template \(key) is already defined in \(first)"))
                } else {
                    owners[key] = loaded.file
                    report.templates.append(loaded)
                }
            case .failure(let failure):
                report.problems += failure.problems
            }
        }
        return report
    }

    /// Problems of one file, as an error.
    public struct FileProblems: Error, Sendable, CustomStringConvertible {
        public var problems: [TemplateProblem]
        public var description: String { problems.map(\.description).joined(separator: "\n") }
    }

    /// Reads, decodes and validates one file.
    /// Where the first string (key or value) holding U+0000 is in `json` (`$.steps[2].handler`), if any.
    static func pathOfNUL(in json: JSONValue, at path: String = "$") -> String? {
        switch json {
        case .string(let text): return text.unicodeScalars.contains("\u{0}") ? path : nil
        case .array(let items):
            for (index, item) in items.enumerated() {
                if let found = pathOfNUL(in: item, at: "\(path)[\(index)]") { return found }
            }
            return nil
        case .object(let members):
            for (key, value) in members {
                if key.unicodeScalars.contains("\u{0}") { return "a key in \(path)" }
                if let found = pathOfNUL(in: value, at: "\(path).\(key)") { return found }
            }
            return nil
        default: return nil
        }
    }

    public func loadFile(atPath path: String) -> Result<LoadedTemplate, FileProblems> {
        let file = displayPath(path)
        func fail(_ message: String, step: String? = nil, template: String? = nil) -> Result<LoadedTemplate, FileProblems> {
            .failure(FileProblems(problems: [TemplateProblem(file: file, template: template, step: step, message: message)]))
        }
        // Refuse an oversize file before reading it into memory (TemplateYAML checks the text again).
        if let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber,
            size.int64Value > Int64(TemplateYAML.maxTemplateBytes)
        {
            return fail("the file is \(size.int64Value) bytes; templates are limited to \(TemplateYAML.maxTemplateBytes) bytes")
        }
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            return fail("cannot read the file as UTF-8 text")
        }
        let json: JSONValue
        do {
            json = try TemplateYAML.parse(text)
        } catch {
            return fail("\(error)")
        }
        if let path = Self.pathOfNUL(in: json) {
            // PostgreSQL's jsonb cannot hold U+0000: registering it would fail the whole boot.
            return fail("\(path) contains a NUL character (\\0), which PostgreSQL's jsonb cannot store")
        }
        let template: TaskTemplate
        do {
            template = try TaskTemplate.fromJSON(json)
        } catch let error as DecodingError {
            let (step, message) = Self.describe(error, in: json)
            return fail(message, step: step)
        } catch {
            return fail("\(error)")
        }
        let findings = TaskTemplateValidator.validate(template)
        guard findings.isEmpty else {
            return .failure(
                FileProblems(
                    problems: findings.map {
                        TemplateProblem(file: file, template: template.identifier, step: $0.step, message: $0.message)
                    }))
        }
        return .success(LoadedTemplate(file: file, template: template))
    }

    // MARK: - Helpers

    private func absolute(_ path: String) -> String {
        let expanded = (path as NSString).expandingTildeInPath
        let joined = expanded.hasPrefix("/") ? expanded : (workingDirectory as NSString).appendingPathComponent(expanded)
        return (joined as NSString).standardizingPath
    }

    /// `path` relative to the working directory when it is below it.
    func displayPath(_ path: String) -> String {
        let base = (workingDirectory as NSString).standardizingPath
        let prefix = base.hasSuffix("/") ? base : base + "/"
        return path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : path
    }

    /// `*.yml`/`*.yaml` files below `root`, sorted by path; `root` itself when it is such a file.
    static func yamlFiles(under root: String) -> [String] {
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        guard manager.fileExists(atPath: root, isDirectory: &isDirectory) else { return [] }
        func isYAML(_ path: String) -> Bool {
            let ext = (path as NSString).pathExtension
            return ext == "yml" || ext == "yaml"
        }
        guard isDirectory.boolValue else { return isYAML(root) ? [root] : [] }
        var files: [String] = []
        guard let enumerator = manager.enumerator(atPath: root) else { return [] }
        while let relative = enumerator.nextObject() as? String {
            let path = (root as NSString).appendingPathComponent(relative)
            var entryIsDirectory: ObjCBool = false
            if isYAML(relative), manager.fileExists(atPath: path, isDirectory: &entryIsDirectory),
                !entryIsDirectory.boolValue
            {
                files.append(path)
            }
        }
        return files.sorted()
    }

    /// A decoding error as (step name, message), the step found from the coding path.
    static func describe(_ error: DecodingError, in json: JSONValue) -> (String?, String) {
        let path: [any CodingKey]
        let detail: String
        switch error {
        case .keyNotFound(let key, let context):
            path = context.codingPath + [key]
            detail = "missing field"
        case .typeMismatch(let type, let context):
            path = context.codingPath
            detail = context.debugDescription.contains("expected") ? context.debugDescription : "expected \(type)"
        case .valueNotFound(let type, let context):
            path = context.codingPath
            detail = "expected \(type), found null"
        case .dataCorrupted(let context):
            path = context.codingPath
            detail = context.debugDescription
        @unknown default:
            return (nil, "\(error)")
        }
        var step: String?
        var rest = path
        if path.count >= 2, path[0].stringValue == "steps", let index = path[1].intValue {
            if case .array(let steps)? = json["steps"], index < steps.count, let name = steps[index]["name"]?.stringValue {
                step = name
            } else {
                step = "#\(index + 1)"
            }
            rest = Array(path.dropFirst(2))
        }
        let location = rest.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        let field = location.hasPrefix(".") ? String(location.dropFirst()) : location
        return (step, field.isEmpty ? detail : "\(field): \(detail)")
    }
}
