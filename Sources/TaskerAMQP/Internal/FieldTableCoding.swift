import NIOCore

/// Field tables and arrays on the wire (RabbitMQ's type octets).
enum FieldTableCoding {
    static func readTable(from reader: inout WireReader, field: String, depth: Int) throws(AMQPFrameError) -> AMQPFieldTable {
        guard depth < WireReader.maximumNesting else { throw .nestingTooDeep(field: field, limit: WireReader.maximumNesting) }
        var inner = WireReader(try reader.longBytes(field), context: field)
        var table: AMQPFieldTable = [:]
        while inner.buffer.readableBytes > 0 {
            let key = try inner.shortString("key")
            table[key] = try readValue(from: &inner, field: "\(field).\(key)", depth: depth)
        }
        return table
    }

    static func readValue(from reader: inout WireReader, field: String, depth: Int) throws(AMQPFrameError) -> AMQPFieldValue {
        let type = try reader.octet("type")
        var value = reader.buffer
        func fixed<T: FixedWidthInteger>(_: T.Type) throws(AMQPFrameError) -> T {
            guard let result = value.readInteger(as: T.self) else {
                throw .truncated(field: field, needed: MemoryLayout<T>.size, available: value.readableBytes)
            }
            return result
        }
        let result: AMQPFieldValue
        switch type {
        case UInt8(ascii: "t"): result = .bool(try fixed(UInt8.self) != 0)
        case UInt8(ascii: "b"): result = .int8(try fixed(Int8.self))
        case UInt8(ascii: "B"): result = .uint8(try fixed(UInt8.self))
        case UInt8(ascii: "s"): result = .int16(try fixed(Int16.self))
        case UInt8(ascii: "u"): result = .uint16(try fixed(UInt16.self))
        case UInt8(ascii: "I"): result = .int32(try fixed(Int32.self))
        case UInt8(ascii: "i"): result = .uint32(try fixed(UInt32.self))
        case UInt8(ascii: "l"): result = .int64(try fixed(Int64.self))
        case UInt8(ascii: "f"): result = .float(Float(bitPattern: try fixed(UInt32.self)))
        case UInt8(ascii: "d"): result = .double(Double(bitPattern: try fixed(UInt64.self)))
        case UInt8(ascii: "D"):
            let scale = try fixed(UInt8.self)
            result = .decimal(scale: scale, value: try fixed(UInt32.self))
        case UInt8(ascii: "T"): result = .timestamp(try fixed(UInt64.self))
        case UInt8(ascii: "V"): result = .void
        case UInt8(ascii: "S"), UInt8(ascii: "x"), UInt8(ascii: "A"), UInt8(ascii: "F"):
            reader.buffer = value
            switch type {
            case UInt8(ascii: "S"): return .longString(try reader.longString(field))
            case UInt8(ascii: "x"): return .bytes(Array(buffer: try reader.longBytes(field)))
            case UInt8(ascii: "F"): return .table(try readTable(from: &reader, field: field, depth: depth + 1))
            default: return .array(try readArray(from: &reader, field: field, depth: depth + 1))
            }
        default:
            throw .unknownFieldType(type, field: field)
        }
        reader.buffer = value
        return result
    }

    static func readArray(from reader: inout WireReader, field: String, depth: Int) throws(AMQPFrameError) -> [AMQPFieldValue] {
        guard depth < WireReader.maximumNesting else { throw .nestingTooDeep(field: field, limit: WireReader.maximumNesting) }
        var inner = WireReader(try reader.longBytes(field), context: field)
        var values: [AMQPFieldValue] = []
        while inner.buffer.readableBytes > 0 {
            values.append(try readValue(from: &inner, field: "\(field)[\(values.count)]", depth: depth))
        }
        return values
    }

    static func writeTable(_ table: AMQPFieldTable, to writer: inout WireWriter, field: String) throws(AMQPFrameError) {
        let start = writer.buffer.writerIndex
        writer.buffer.writeInteger(UInt32(0))
        // Sorted keys: the same table always encodes to the same bytes.
        for key in table.keys.sorted() {
            try writer.shortString(key, field: "\(field).key")
            try writeValue(table[key]!, to: &writer, field: "\(field).\(key)")
        }
        writer.buffer.setInteger(UInt32(writer.buffer.writerIndex - start - 4), at: start)
    }

    static func writeValue(_ value: AMQPFieldValue, to writer: inout WireWriter, field: String) throws(AMQPFrameError) {
        func tag(_ character: Character) { writer.buffer.writeInteger(character.asciiValue!) }
        func fixed<T: FixedWidthInteger>(_ character: Character, _ value: T) {
            tag(character)
            writer.buffer.writeInteger(value)
        }
        switch value {
        case .bool(let v): fixed("t", UInt8(v ? 1 : 0))
        case .int8(let v): fixed("b", v)
        case .uint8(let v): fixed("B", v)
        case .int16(let v): fixed("s", v)
        case .uint16(let v): fixed("u", v)
        case .int32(let v): fixed("I", v)
        case .uint32(let v): fixed("i", v)
        case .int64(let v): fixed("l", v)
        case .float(let v): fixed("f", v.bitPattern)
        case .double(let v): fixed("d", v.bitPattern)
        case .decimal(let scale, let v):
            fixed("D", scale)
            writer.buffer.writeInteger(v)
        case .timestamp(let v): fixed("T", v)
        case .void: tag("V")
        case .longString(let v):
            tag("S")
            writer.longString(v)
        case .bytes(let v):
            tag("x")
            writer.longBytes(ByteBuffer(bytes: v))
        case .table(let v):
            tag("F")
            try writeTable(v, to: &writer, field: field)
        case .array(let values):
            tag("A")
            let start = writer.buffer.writerIndex
            writer.buffer.writeInteger(UInt32(0))
            for (index, element) in values.enumerated() {
                try writeValue(element, to: &writer, field: "\(field)[\(index)]")
            }
            writer.buffer.setInteger(UInt32(writer.buffer.writerIndex - start - 4), at: start)
        }
    }
}
