import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// Template files an attacker (or an accident) could put in the template directory: alias bombs,
/// oversize files, deep nesting. Each is refused with a problem naming the file, through the real
/// loader, and the other templates still load.
@Suite("Task templates: hostile files")
struct TemplateHostileInputTests {
    /// The reported file: nine levels of nine aliases, 682 bytes, 9⁹ ≈ 387 million strings once expanded.
    static let billionLaughs: String = {
        var text = "name: laughs\nnamespace_name: hostile\nversion: 1.0.0\n"
        text += "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
        let levels = Array("bcdefghi")
        for (index, level) in levels.enumerated() {
            let previous = index == 0 ? "a" : String(levels[index - 1])
            text += "\(level): &\(level) [" + Array(repeating: "*\(previous)", count: 9).joined(separator: ",") + "]\n"
        }
        return text + "steps: [*i]\n"
    }()

    static let validTemplate = HostileFixtures.validTemplate

    func load(_ files: [String: String]) throws -> TemplateLoadReport {
        try withTemporaryDirectory { directory in
            for (name, text) in files { _ = try writeFile(directory, name, text) }
            return TaskTemplateLoader(environment: [:], workingDirectory: directory).load(directory: directory)
        }
    }

    @Test func aBillionLaughsTemplateIsRefusedWithoutExpandingIt() throws {
        #expect(Self.billionLaughs.utf8.count < 700)
        let report = try load(["laughs.yaml": Self.billionLaughs, "fine.yaml": Self.validTemplate])
        #expect(report.templates.map(\.template.identifier) == ["hostile/fine/1.0.0"])
        let problem = try #require(report.problems.first)
        #expect(report.problems.count == 1)
        #expect(problem.file == "laughs.yaml")
        #expect(problem.message.contains("expands to more than \(TemplateYAML.maxExpandedNodes) YAML nodes"), "\(problem)")
    }

    /// The same bomb used as a mapping key: Yams hashes keys while composing, walking the alias in
    /// full (seven levels took 25 s, nine would take hours), so the bound must hold before Yams composes.
    /// The time limit only keeps a regression from hanging the suite.
    @Test(.timeLimit(.minutes(1))) func aBillionLaughsKeyIsRefusedBeforeYamsHashesIt() throws {
        let text = Self.billionLaughs.replacingOccurrences(of: "steps: [*i]\n", with: "? *i\n: x\n")
        let report = try load(["key.yaml": text])
        let problem = try #require(report.problems.first)
        #expect(problem.file == "key.yaml")
        #expect(problem.message.contains("expands to more than \(TemplateYAML.maxExpandedNodes) YAML nodes"), "\(problem)")
        // A `*` that is not an alias (quoted, inside a plain scalar, in a comment) changes nothing.
        let stars = Self.validTemplate + "\ndescription: \"*not an alias\"\nnote: 2*3 # *comment\n"
        #expect(try TemplateYAML.parse(stars)["note"] == .string("2*3"))
    }

    @Test func aliasesWithinTheBoundStillWork() throws {
        let text = """
            name: anchored
            namespace_name: hostile
            version: 1.0.0
            steps:
              - name: first
                handler: &noop
                  callable: tasker.noop
                  initialization: {limit: 3}
              - name: second
                depends_on: [first]
                handler: *noop
            """
        let report = try load(["anchored.yaml": text])
        #expect(report.problems.isEmpty, "\(report.problems)")
        let template = try #require(report.templates.first?.template)
        #expect(template.steps.map(\.handler.callable) == ["tasker.noop", "tasker.noop"])
        #expect(template.step(named: "second")?.handler.initialization == .object(["limit": .int(3)]))
    }

    @Test func anOversizeTemplateIsRefusedNamingTheFile() throws {
        let padding = String(
            repeating: "# padding to exceed the template size limit\n",
            count: TemplateYAML.maxTemplateBytes / 40)
        let report = try load(["huge.yaml": Self.validTemplate + "\n" + padding])
        let problem = try #require(report.problems.first)
        #expect(report.templates.isEmpty)
        #expect(problem.file == "huge.yaml")
        #expect(problem.message.contains("templates are limited to \(TemplateYAML.maxTemplateBytes) bytes"), "\(problem)")
        // The text form (another caller than the loader) has the same bound.
        #expect(throws: TemplateYAMLError.self) { try TemplateYAML.parse(Self.validTemplate + "\n" + padding) }
    }

    /// PostgreSQL's `jsonb` cannot hold U+0000: a template carrying one used to fail its
    /// registration and with it the whole boot. It is refused at load, naming the file and where.
    @Test func aTemplateWithANULCharacterIsRefusedNamingWhere() throws {
        let report = try load(["nul.yaml": Self.nulTemplate, "fine.yaml": Self.validTemplate])
        #expect(report.templates.map(\.template.name) == ["fine"])
        let problem = try #require(report.problems.first)
        #expect(problem.file == "nul.yaml")
        #expect(problem.message.contains("$.description contains a NUL character"), "\(problem)")
    }

    static let nulTemplate = HostileFixtures.nulTemplate

    @Test func wideButLegitimateDocumentsStayBelowTheNodeBound() throws {
        // 10,000 values: far more than any real template, far below the bound.
        let list = (0..<10_000).map(String.init).joined(separator: ", ")
        let json = try TemplateYAML.parse("values: [\(list)]\n")
        guard case .array(let values)? = json["values"] else {
            Issue.record("values is not an array")
            return
        }
        #expect(values.count == 10_000)
    }

    @Test func deepNestingIsRefusedNotACrash() throws {
        // Refused before Yams (whose composer recurses per level) sees it, naming the file.
        let deep = "x: " + String(repeating: "[", count: 5_000) + String(repeating: "]", count: 5_000) + "\n"
        let report = try load(["deep.yaml": Self.validTemplate.replacingOccurrences(of: "name: fine", with: "name: deep") + "\n" + deep])
        let problem = try #require(report.problems.first)
        #expect(problem.file == "deep.yaml")
        #expect("\(problem)".contains("more than 64 levels"), "\(problem)")
    }

    /// Issue #26 (found by the fuzzer): flow nesting of 300–1,000 levels overflowed a 1 MiB stack in
    /// Yams' composer. Nesting is counted first: up to `maxNesting` parses on a 1 MiB stack, one more
    /// (flow, block mappings or block sequences) is refused with the line, and block scalars holding
    /// brackets count nothing.
    @Test func nestingIsBoundedBeforeYamsComposesOnASmallStack() async throws {
        let limit = TemplateYAML.maxNesting
        let makers: [@Sendable (Int) -> String] = [Self.flowYAML, Self.blockYAML, Self.dashYAML]
        for make in makers {
            let parsed = await Self.onOneMiBStack { (try? TemplateYAML.parse(make(limit))) != nil }
            #expect(parsed, "\(make(limit).prefix(80))")
            for depth in [limit + 1, 300, 900] {
                let error = #expect(throws: TemplateYAMLError.self) { try TemplateYAML.parse(make(depth)) }
                #expect(error?.message.contains("more than \(limit) levels deep (line ") == true, "\(String(describing: error))")
            }
        }
        let withScalar =
            "description: |\n  [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n  {{{{\nname: ok\n"
        #expect(try TemplateYAML.parse(withScalar)["name"] == "ok")
        #expect(try TemplateYAML.parse("a: '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[['\n")["a"] != nil)
    }

    static func flowYAML(_ depth: Int) -> String {
        "x: " + String(repeating: "[", count: depth - 1) + String(repeating: "]", count: depth - 1) + "\n"
    }
    static func blockYAML(_ depth: Int) -> String {
        (0..<depth).map { String(repeating: " ", count: $0 * 2) + "k\($0):" }.joined(separator: "\n") + " 1\n"
    }
    static func dashYAML(_ depth: Int) -> String { "x:\n" + String(repeating: "- ", count: depth - 1) + "1\n" }

    /// Runs `body` on a new thread with a 1 MiB stack (the size of a database connection's thread).
    static func onOneMiBStack<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            let thread = Thread { continuation.resume(returning: body()) }
            thread.stackSize = 1 << 20
            thread.start()
        }
    }
}
