import Foundation
@testable import ImagePipelineKit

/// Packed 8-bit pixels with a channel count, for comparing decodes with references.
struct PixelImage: Equatable {
    var width: Int
    var height: Int
    var channels: Int
    var bytes: [UInt8]

    /// The RGB channels of a bitmap (alpha dropped: JPEG references are opaque).
    init(rgbOf bitmap: Bitmap) {
        width = bitmap.width
        height = bitmap.height
        channels = 3
        bytes = []
        bytes.reserveCapacity(width * height * 3)
        for y in 0..<height {
            let row = bitmap.row(y)
            for x in 0..<width { bytes += [row[x * 4], row[x * 4 + 1], row[x * 4 + 2]] }
        }
    }

    init(width: Int, height: Int, channels: Int, bytes: [UInt8]) {
        self.width = width
        self.height = height
        self.channels = channels
        self.bytes = bytes
    }

    /// A binary PPM (P6) or PGM (P5) with maxval 255, as `djpeg` writes; PGM is expanded to RGB.
    init(netpbm data: Data) throws {
        struct Malformed: Error {}
        var fields: [String] = []
        var index = data.startIndex
        while fields.count < 4, index < data.endIndex {
            while index < data.endIndex, data[index] == UInt8(ascii: "#") || Character(UnicodeScalar(data[index])).isWhitespace {
                if data[index] == UInt8(ascii: "#") {
                    while index < data.endIndex, data[index] != UInt8(ascii: "\n") { index += 1 }
                } else { index += 1 }
            }
            var token = ""
            while index < data.endIndex, !Character(UnicodeScalar(data[index])).isWhitespace {
                token.append(Character(UnicodeScalar(data[index])))
                index += 1
            }
            fields.append(token)
        }
        index += 1   // the single whitespace after maxval
        guard fields.count == 4, let width = Int(fields[1]), let height = Int(fields[2]), fields[3] == "255" else { throw Malformed() }
        let samples = Array(data[index...])
        switch fields[0] {
        case "P6":
            guard samples.count >= width * height * 3 else { throw Malformed() }
            self.init(width: width, height: height, channels: 3, bytes: Array(samples.prefix(width * height * 3)))
        case "P5":
            guard samples.count >= width * height else { throw Malformed() }
            self.init(width: width, height: height, channels: 3, bytes: samples.prefix(width * height).flatMap { [$0, $0, $0] })
        default:
            throw Malformed()
        }
    }

    /// Largest absolute difference of any sample.
    func maxDifference(to other: PixelImage) -> Int {
        precondition(width == other.width && height == other.height && channels == other.channels)
        return zip(bytes, other.bytes).reduce(0) { max($0, abs(Int($1.0) - Int($1.1))) }
    }

    /// Mean absolute difference over all samples.
    func meanDifference(to other: PixelImage) -> Double {
        precondition(width == other.width && height == other.height && channels == other.channels)
        let total = zip(bytes, other.bytes).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }
        return Double(total) / Double(bytes.count)
    }

    /// Peak signal-to-noise ratio in dB (infinity when identical).
    func psnr(to other: PixelImage) -> Double {
        precondition(width == other.width && height == other.height && channels == other.channels)
        let squared = zip(bytes, other.bytes).reduce(0.0) { $0 + pow(Double(Int($1.0) - Int($1.1)), 2) }
        if squared == 0 { return .infinity }
        return 10 * log10(255 * 255 / (squared / Double(bytes.count)))
    }
}

/// Runs a command-line reference decoder and returns its standard output.
enum ReferenceTool {
    /// The full path of `name` on PATH, or nil.
    static func path(of name: String) -> String? {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Runs `tool` with `arguments` and returns stdout; throws when its exit status is not accepted.
    static func run(_ tool: String, _ arguments: [String], acceptingStatus: Set<Int32> = [0]) throws -> Data {
        struct Failed: Error, CustomStringConvertible { var description: String }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard acceptingStatus.contains(process.terminationStatus) else { throw Failed(description: "\(tool) \(arguments) exited \(process.terminationStatus)") }
        return data
    }
}
