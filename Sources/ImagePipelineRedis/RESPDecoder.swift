import NIOCore

/// Reads RESP2 replies from the connection's bytes, one complete reply at a time. A reply larger than the
/// limits (or malformed) is an error that closes the connection: a hostile or confused server never makes the
/// client allocate without bound.
struct RESPDecoder: ByteToMessageDecoder {
    typealias InboundOut = RESPValue

    /// The largest bulk string accepted.
    let maxBulkBytes: Int
    /// The most elements one array may have.
    let maxArrayCount = 1024
    /// How deep arrays may nest.
    let maxDepth = 4

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        var view = buffer
        guard let value = try parse(&view, depth: 0) else { return .needMoreData }
        buffer.moveReaderIndex(to: view.readerIndex)
        context.fireChannelRead(Self.wrapInboundOut(value))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws
        -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        return .needMoreData
    }

    /// One value from `buffer` (its reader index moved past it), or `nil` when the bytes end before it does.
    func parse(_ buffer: inout ByteBuffer, depth: Int) throws -> RESPValue? {
        guard let marker = buffer.readInteger(as: UInt8.self) else { return nil }
        guard let line = try readLine(&buffer) else { return nil }
        switch marker {
        case UInt8(ascii: "+"): return .simpleString(line)
        case UInt8(ascii: "-"): return .error(line)
        case UInt8(ascii: ":"):
            guard let number = Int64(line) else { throw RedisClientError.protocolViolation("bad integer") }
            return .integer(number)
        case UInt8(ascii: "$"):
            guard let length = Int(line), length >= -1 else { throw RedisClientError.protocolViolation("bad bulk length") }
            guard length != -1 else { return .bulkString(nil) }
            guard length <= maxBulkBytes else { throw RedisClientError.replyTooLarge(bytes: length, limit: maxBulkBytes) }
            guard buffer.readableBytes >= length + 2, let bytes = buffer.readSlice(length: length) else { return nil }
            guard buffer.readInteger(as: UInt16.self) == 0x0D0A else { throw RedisClientError.protocolViolation("bulk without CRLF") }
            return .bulkString(bytes)
        case UInt8(ascii: "*"):
            guard let count = Int(line), count >= -1 else { throw RedisClientError.protocolViolation("bad array length") }
            guard count != -1 else { return .array(nil) }
            guard count <= maxArrayCount, depth < maxDepth else { throw RedisClientError.protocolViolation("array too large") }
            var elements: [RESPValue] = []
            elements.reserveCapacity(count)
            for _ in 0..<count {
                guard let element = try parse(&buffer, depth: depth + 1) else { return nil }
                elements.append(element)
            }
            return .array(elements)
        default:
            throw RedisClientError.protocolViolation("unknown reply type \(marker)")
        }
    }

    /// The line up to CRLF, without it; `nil` when no CRLF came yet. A line longer than 1 KiB is not RESP.
    private func readLine(_ buffer: inout ByteBuffer) throws -> String? {
        let view = buffer.readableBytesView.prefix(1024 + 2)
        guard let end = view.firstIndex(of: UInt8(ascii: "\r")), end + 1 < view.endIndex else {
            if view.count >= 1024 + 2 { throw RedisClientError.protocolViolation("line too long") }
            return nil
        }
        guard view[end + 1] == UInt8(ascii: "\n") else { throw RedisClientError.protocolViolation("CR without LF") }
        let length = end - view.startIndex
        let line = buffer.readString(length: length)
        buffer.moveReaderIndex(forwardBy: 2)
        return line
    }
}
