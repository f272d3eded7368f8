import Testing

@testable import TaskerModel

/// `FailureDetail`: the exception each SDK keeps in a failed result, read for people (issue #28 item 6).
@Suite struct FailureDetailTests {
    static func failed(_ custom: JSONValue, error: JSONValue = ["message": "'price'", "error_type": "handler_error"]) -> JSONValue {
        ["success": false, "status": "failed", "error": error, "metadata": ["custom": custom, "retryable": true]]
    }

    @Test func taskerPyAndOurPythonSDKKeepTypeAndTraceback() {
        let detail = FailureDetail(
            result: Self.failed([
                "exception_type": "KeyError", "traceback": "Traceback (most recent call last):\n  raise KeyError('price')",
            ]))
        #expect(
            detail
                == FailureDetail(
                    errorType: "handler_error", message: "'price'", exceptionType: "KeyError",
                    trace: "Traceback (most recent call last):\n  raise KeyError('price')"))
    }

    @Test func rubysClassAndBacktraceLinesAndTypeScriptsStack() {
        let ruby = FailureDetail(result: Self.failed(["exception_class": "ArgumentError", "backtrace": ["a.rb:1", "b.rb:2"]]))
        #expect(ruby?.exceptionType == "ArgumentError" && ruby?.trace == "a.rb:1\nb.rb:2")
        let upstreamRuby = FailureDetail(result: Self.failed(["exception_class": "E", "stack_trace": "x.rb:9"]))
        #expect(upstreamRuby?.trace == "x.rb:9")
        let typescript = FailureDetail(result: Self.failed(["exception": "TypeError", "stack": "TypeError: x\n    at f (h.js:1:2)"]))
        #expect(typescript?.exceptionType == "TypeError" && typescript?.trace?.hasSuffix("(h.js:1:2)") == true)
    }

    @Test func theErrorsOwnBacktraceIsTheLastResort() {
        let detail = FailureDetail(result: Self.failed([:], error: ["message": "m", "error_type": "t", "backtrace": "line 1"]))
        #expect(detail == FailureDetail(errorType: "t", message: "m", exceptionType: nil, trace: "line 1"))
    }

    @Test func successesAndOtherDocumentsHaveNone() {
        #expect(FailureDetail(result: ["success": true, "result": [:]]) == nil)
        #expect(FailureDetail(result: "text") == nil)
        #expect(FailureDetail(result: Self.failed(["traceback": 7, "exception_type": ["no"]]))?.trace == nil)
    }
}
