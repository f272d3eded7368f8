import Foundation
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerWorker

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
import TaskerStore
#endif

/// Reading the C ABI's input strings and writing its output strings.
enum CStrings {
    /// A NUL-terminated UTF-8 argument; NULL or malformed UTF-8 is an invalid argument naming `name`.
    static func text(_ pointer: UnsafePointer<CChar>?, _ name: String) throws(FFIError) -> String {
        guard let pointer else { throw .invalid("\(name) is NULL") }
        guard let text = String(validatingCString: pointer) else { throw .invalid("\(name) is not valid UTF-8") }
        return text
    }

    /// An optional JSON object argument (NULL: `{}`), parsed; `name` is named in every error.
    static func object(_ pointer: UnsafePointer<CChar>?, _ name: String) throws(FFIError) -> [String: JSONValue] {
        guard let pointer else { return [:] }
        let text = try text(pointer, name)
        let value: JSONValue
        do {
            value = try UntrustedJSON.decode(JSONValue.self, from: text, what: name)
        } catch {
            throw .invalid("\(name) is not JSON: \(ForeignDispatchChannel.describe(error))")
        }
        guard case .object(let members) = value else { throw .invalid("\(name) is not a JSON object") }
        return members
    }

    /// Checks an output pointer before any work is done.
    static func require<T>(_ pointer: UnsafeMutablePointer<T>?, _ name: String) throws(FFIError) -> UnsafeMutablePointer<T> {
        guard let pointer else { throw .invalid("\(name) is NULL") }
        return pointer
    }

    /// A `malloc`ed copy of `text` for the caller to free with `tasker_string_free`.
    static func copy(_ text: String) throws(FFIError) -> UnsafeMutablePointer<CChar> {
        guard let copy = strdup(text.replacingNULs()) else { throw FFIError(.internal, "out of memory copying a result string") }
        return copy
    }

    /// `value` as compact JSON with sorted keys, copied for the caller.
    static func json(_ value: JSONValue) throws(FFIError) -> UnsafeMutablePointer<CChar> {
        do {
            return try copy(value.jsonString())
        } catch let error as FFIError {
            throw error
        } catch {
            throw FFIError(.internal, "cannot encode the result as JSON: \(error)")
        }
    }

    /// An `Encodable` body of the operator API, encoded as the REST API encodes it, copied for the caller.
    static func encoded(_ value: some Encodable) throws(FFIError) -> UnsafeMutablePointer<CChar> {
        let data: Data
        do {
            data = try APIJSON.encode(value)
        } catch {
            throw FFIError(.internal, "cannot encode the result as JSON: \(error)")
        }
        return try copy(String(decoding: data, as: UTF8.self))
    }
}
