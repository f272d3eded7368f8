import Foundation
import TaskerModel
import TaskerWorker
import TaskerWorkerTesting
import Testing

/// Typed `Codable` reading of a step's data and typed results: a value that does not decode is a
/// permanent failure naming what and where (the key path); nothing traps.
@Suite struct HandlerSDKCodingTests {
    struct Item: Codable, Equatable {
        let sku: String
        let price: Int64
    }
    struct Order: Codable, Equatable {
        let orderID: Int64
        let items: [Item]

        enum CodingKeys: String, CodingKey {
            case orderID = "order_id"
            case items
        }
    }

    static let order: JSONValue = ["order_id": 7, "items": [["sku": "a", "price": 3], ["sku": "b", "price": 4]]]

    /// The failure `body` throws.
    static func failure(_ body: () throws -> Void) -> StepFailure? {
        do {
            try body()
            return nil
        } catch let failure as StepFailure {
            return failure
        } catch {
            Issue.record("threw \(type(of: error)) instead of a StepFailure: \(error)")
            return nil
        }
    }

    @Test func theTaskContextDecodesIntoAType() throws {
        let context = StepContext.testing(taskContext: Self.order)
        #expect(try context.input(as: Order.self) == Order(orderID: 7, items: [Item(sku: "a", price: 3), Item(sku: "b", price: 4)]))
    }

    @Test func aMissingNestedMemberIsNamedByItsKeyPath() throws {
        let context = StepContext.testing(taskContext: ["order_id": 7, "items": [["sku": "a", "price": 3], ["sku": "b"]]])
        let failure = try #require(Self.failure { _ = try context.input(as: Order.self) })
        #expect(failure.message == "cannot decode context.items[1].price: missing")
        #expect(!failure.retryable && failure.errorType == "validation_error")
        #expect(failure.errorCode == "DATA_DECODING_ERROR")
        #expect(failure.context == ["source": "context", "path": "context.items[1].price"])
    }

    @Test func aMistypedOrNullMemberIsNamedByItsKeyPath() throws {
        let mistyped = StepContext.testing(taskContext: ["order_id": "seven", "items": []])
        let typeFailure = try #require(Self.failure { _ = try mistyped.input(as: Order.self) })
        #expect(typeFailure.message.hasPrefix("cannot decode context.order_id: expected Int64"), "\(typeFailure.message)")

        let null = StepContext.testing(taskContext: ["order_id": nil, "items": []])
        let nullFailure = try #require(Self.failure { _ = try null.input(as: Order.self) })
        #expect(nullFailure.message.hasPrefix("cannot decode context.order_id: "), "\(nullFailure.message)")

        let noContext = StepContext.testing(taskContext: .null)
        let noContextFailure = try #require(Self.failure { _ = try noContext.input(as: Order.self) })
        #expect(noContextFailure.context["path"] == "context", "\(noContextFailure)")
    }

    /// Numbers that do not fit the declared type are failures, never traps.
    @Test func hostileNumbersFailInsteadOfTrapping() throws {
        struct Count: Decodable { let count: Int64 }
        struct Small: Decodable { let count: Int32 }
        for value: JSONValue in [1e300, -1e300, 9.3e18, 3.5, "12", true, [1], ["a": 1]] {
            let context = StepContext.testing(taskContext: ["count": value])
            let failure = try #require(Self.failure { _ = try context.input(as: Count.self) }, "\(value)")
            // Foundation's JSONDecoder reports a number that does not fit (1e300, 3.5 into Int64)
            // at its container's path, not the member's: the path names `context` there.
            #expect(failure.context["path"]?.stringValue?.hasPrefix("context") == true, "\(value): \(failure)")
            #expect(!failure.retryable && failure.errorType == "validation_error")
        }
        let big = StepContext.testing(taskContext: ["count": .int(Int64.max)])
        let small = try #require(Self.failure { _ = try big.input(as: Small.self) })
        #expect(small.context["path"]?.stringValue?.hasPrefix("context") == true && !small.retryable)
        #expect(try big.input(as: Count.self).count == Int64.max)
    }

    @Test func eachSourceHasItsOwnPrefixAndErrorType() throws {
        struct Needs: Decodable { let needed: Int64 }
        let context = StepContext.testing(
            dependencyResults: ["validate": ["other": 1]], stepInputs: ["other": 1],
            stepConfig: ["other": 1])
        let cases: [(StepFailure?, String, String)] = [
            (Self.failure { _ = try context.inputs(as: Needs.self) }, "inputs.needed", "validation_error"),
            (Self.failure { _ = try context.configuration(as: Needs.self) }, "handler.initialization.needed", "configuration_error"),
            (
                Self.failure { _ = try context.dependencyResult(of: "validate", as: Needs.self) },
                "dependency_results.validate.result.needed", "dependency_error"
            ),
            (
                Self.failure { _ = try context.dependencyResult(of: "absent", as: Needs.self) },
                "dependency_results.absent.result", "dependency_error"
            ),
        ]
        for (failure, path, errorType) in cases {
            let failure = try #require(failure, "\(path)")
            #expect(failure.context["path"] == .string(path), "\(failure)")
            #expect(failure.message.hasPrefix("cannot decode \(path): "), "\(failure.message)")
            #expect(failure.errorType == errorType && !failure.retryable)
        }
        #expect(
            Self.failure { _ = try context.dependencyResult(of: "absent", as: Needs.self) }?.message
                == "cannot decode dependency_results.absent.result: absent is not among the step's processed dependencies")
    }

    @Test func aDependencysResultDecodesIntoAType() throws {
        let context = StepContext.testing(dependencyResults: ["load_order": Self.order])
        #expect(try context.dependencyResult(of: "load_order", as: Order.self).items.count == 2)
    }

    @Test func anEncodableBecomesTheResult() throws {
        let result = try StepHandlerResult.success(
            encoding: Order(orderID: 7, items: [Item(sku: "a", price: 3)]),
            metadata: ["source": "test"])
        #expect(result.result == ["order_id": 7, "items": [["sku": "a", "price": 3]]])
        #expect(result.customMetadata == ["source": "test"])
        #expect(try result.decodedResult(as: Order.self).orderID == 7)
    }

    @Test func aResultThatDoesNotEncodeFailsNamingItsKeyPath() throws {
        struct Ratio: Encodable { let parts: [Double] }
        let failure = try #require(Self.failure { _ = try StepHandlerResult.success(encoding: Ratio(parts: [1, .nan])) })
        #expect(failure.errorType == "result_encoding_error" && !failure.retryable)
        #expect(failure.context["path"] == "result.parts[1]", "\(failure)")
        #expect(failure.message.hasPrefix("cannot encode result.parts[1]: "), "\(failure.message)")
    }
}
