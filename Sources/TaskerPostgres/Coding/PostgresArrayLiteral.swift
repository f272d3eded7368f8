import Foundation

/// A one-dimensional array parameter in PostgreSQL's text format (`{"a","b",NULL}`), sent untyped:
/// the statement casts it (`$1::text[]`, `$2::uuid[]`, …). Lets one statement insert a row per element.
public struct PostgresArrayLiteral: PostgresEncodable {
    public let postgresText: String?
    public var postgresType: UInt32 { 0 }

    public init(_ elements: [String?]) {
        var text = "{"
        for (index, element) in elements.enumerated() {
            if index > 0 { text += "," }
            guard let element else {
                text += "NULL"
                continue
            }
            text += "\""
            for character in element.unicodeScalars {
                if character == "\"" || character == "\\" { text += "\\" }
                text.unicodeScalars.append(character)
            }
            text += "\""
        }
        postgresText = text + "}"
    }

    public init(_ uuids: [UUID]) { self.init(uuids.map { Optional($0.uuidString.lowercased()) }) }
    public init(_ values: [Bool]) { self.init(values.map { Optional($0 ? "t" : "f") }) }
    public init(_ values: [Int32]) { self.init(values.map { Optional(String($0)) }) }
}
