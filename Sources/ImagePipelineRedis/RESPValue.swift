import NIOCore

/// One RESP2 reply from Redis.
public enum RESPValue: Sendable, Equatable {
    /// `+OK`.
    case simpleString(String)
    /// `-ERR …`: the server refused the command.
    case error(String)
    /// `:1`.
    case integer(Int64)
    /// `$5 hello`; `nil` for the null bulk string (`$-1`, a missing key).
    case bulkString(ByteBuffer?)
    /// `*2 …`; `nil` for the null array.
    case array([RESPValue]?)
}

/// One command to Redis: its name and arguments, each sent as a bulk string.
struct RedisCommand: Sendable {
    var arguments: [ByteBuffer]

    init(_ name: String, _ arguments: [RedisArgument]) {
        var all = [ByteBuffer(string: name)]
        for argument in arguments {
            switch argument {
            case .string(let string): all.append(ByteBuffer(string: string))
            case .bytes(let bytes): all.append(bytes)
            }
        }
        self.arguments = all
    }

    /// The command as RESP: an array of bulk strings, written into `buffer`.
    func encode(into buffer: inout ByteBuffer) {
        buffer.writeString("*\(arguments.count)\r\n")
        for argument in arguments {
            buffer.writeString("$\(argument.readableBytes)\r\n")
            buffer.writeImmutableBuffer(argument)
            buffer.writeStaticString("\r\n")
        }
    }

    /// The command's name, for errors and metrics.
    var name: String { arguments.first.map { String(buffer: $0) } ?? "" }
}

/// An argument of a command.
enum RedisArgument: Sendable {
    case string(String)
    case bytes(ByteBuffer)
}
