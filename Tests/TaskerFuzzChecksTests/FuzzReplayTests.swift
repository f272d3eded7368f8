import Foundation
import TaskerFuzzChecks
import Testing

/// Every libFuzzer target's contract, checked on the ordinary build in every test run: its seed
/// corpus (`Fuzz/Corpus/<target>`: valid inputs of each shape and issue #26's crashers) and
/// ``SeededMutator``'s mutations of it, each input on the product's smallest stack
/// (``FuzzInputThread``). Deterministic: the same inputs in every run. Coverage-guided fuzzing, which
/// finds what these do not, is `scripts/fuzz` (a sanitized second build; see its header).
@Suite("Fuzz targets replayed: seed corpora and their seeded mutations")
struct FuzzReplayTests {
    /// Mutations per seed: about 14,000 inputs over the nine targets, under ten seconds of a debug build.
    static let mutationsPerSeed = 100

    static let fuzzFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz")

    static func seeds(of target: FuzzTarget) throws -> [(name: String, bytes: [UInt8])] {
        let folder = fuzzFolder.appendingPathComponent("Corpus").appendingPathComponent(target.name)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        return try names.map { name in (name, Array(try Data(contentsOf: folder.appendingPathComponent(name)))) }
    }

    @Test("each target's seeds and their mutations keep its contract", arguments: FuzzTarget.all)
    func replay(_ target: FuzzTarget) async throws {
        let seeds = try Self.seeds(of: target)
        #expect(seeds.count >= 5, "Fuzz/Corpus/\(target.name) holds \(seeds.count) seeds")
        let thread = try FuzzInputThread(name: "fuzz-\(target.name)")
        let breaches = FuzzBreachLog()
        var mutator = SeededMutator(seed: SeededMutator.seed(naming: target.name), pool: seeds.map(\.bytes))
        var inputs = 0
        for seed in seeds {
            var batch = [seed.bytes]
            for _ in 0..<Self.mutationsPerSeed { batch.append(mutator.mutate(seed.bytes)) }
            let check = target.check
            let before = breaches.all.count
            await FuzzContract.$breaches.withValue(breaches) {
                for input in batch { await thread.run { check(input) } }
            }
            inputs += batch.count
            #expect(breaches.all.count == before, "\(target.name): seed \(seed.name) or a mutation of it broke the contract")
        }
        for report in breaches.all.prefix(10) { Issue.record("\(target.name): \(report)") }
        print("fuzz replay \(target.name): \(inputs) inputs from \(seeds.count) seeds, \(breaches.all.count) broken contracts")
    }

    @Test("every target under Fuzz/Targets has a check here and a seed corpus, and no check lacks a target")
    func theTargetsTheChecksAndTheCorporaAgree() throws {
        let files = FileManager.default
        let targets = try files.contentsOfDirectory(atPath: Self.fuzzFolder.appendingPathComponent("Targets").path).sorted()
        let corpora = try files.contentsOfDirectory(atPath: Self.fuzzFolder.appendingPathComponent("Corpus").path)
            .filter { !$0.hasSuffix(".py") }.sorted()
        #expect(FuzzTarget.all.map(\.name).sorted() == targets)
        #expect(corpora == targets)
    }

    @Test("a broken contract is recorded in the replay's log, with its place, and the replay goes on")
    func aBrokenContractIsRecorded() async throws {
        let thread = try FuzzInputThread()
        let breaches = FuzzBreachLog()
        let target = FuzzTarget(name: "Broken") { bytes in
            FuzzContract.require(bytes.count < 3, "\(bytes.count) bytes")
        }
        await FuzzContract.$breaches.withValue(breaches) {
            for input: [UInt8] in [[1], [1, 2, 3], [1, 2, 3, 4]] { await thread.run { target.check(input) } }
        }
        #expect(breaches.all.count == 2)
        #expect(breaches.all.first?.contains("FuzzReplayTests.swift") == true)
        #expect(breaches.all.first?.hasSuffix("3 bytes") == true)
    }

    @Test("the mutator is deterministic, varies its inputs and keeps them bounded")
    func theMutatorIsDeterministicAndBounded() {
        let pool: [[UInt8]] = [Array(#"{"a":[1,2,{"b":"c"}]}"#.utf8), Array("key = 1\n".utf8)]
        var first = SeededMutator(seed: SeededMutator.seed(naming: "X"), pool: pool)
        var second = SeededMutator(seed: SeededMutator.seed(naming: "X"), pool: pool)
        let a = (0..<500).map { _ in first.mutate(pool[0]) }
        let b = (0..<500).map { _ in second.mutate(pool[0]) }
        #expect(a == b)
        #expect(Set(a).count > 400)
        #expect(a.allSatisfy { $0.count <= SeededMutator.maximumSize })
        #expect(SeededMutator.seed(naming: "X") != SeededMutator.seed(naming: "Y"))
    }
}
