import ArgumentParser
import Foundation
import ImagePipelineKit

/// `sample-cli decode`: decodes files with the built-in codecs and reports what it found.
struct DecodeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode",
        abstract: "Decode JPEG, PNG, GIF, WebP, AVIF and JPEG XL files and report format, size, frames, orientation and decode time.",
        discussion: """
            Each FILE may be a directory: its files are decoded in name order. With --json, prints one \
            JSON object per file: {file, format, width, height, originalWidth, originalHeight, frames, \
            orientation, progressive, decodeMs} or {file, error, errorCode, errorName}. width/height are \
            after --target scaling and EXIF orientation. --out writes the first frame in the format its \
            extension names: .png, .jpg/.jpeg (quality 90) or .webp (lossless); a directory gets PNGs. Exits 0 \
            when every file decoded, 1 otherwise; bad input never crashes the process.
            """
    )

    @Argument(help: "Image files or directories to decode.")
    var files: [String]

    @Option(help: ArgumentHelp("Decode at this target size.", valueName: "WxH"))
    var target: TargetOption?

    @Option(help: "How the image is fitted into --target: fit, fill, stretch or center.")
    var mode: ContentMode = .fit

    @OptionGroup var output: JSONOutput

    @Option(help: ArgumentHelp(
        "Write the decoded image (first frame) as the extension says: .png, .jpg/.jpeg or .webp. With several files, a directory of PNGs (created if needed).",
        valueName: "FILE"))
    var out: String?

    func validate() throws {
        guard let out, !out.hasSuffix("/") else { return }
        var isDirectory: ObjCBool = false
        let ext = (out as NSString).pathExtension.lowercased()
        if !ext.isEmpty, !["png", "jpg", "jpeg", "webp"].contains(ext),
           !(FileManager.default.fileExists(atPath: out, isDirectory: &isDirectory) && isDirectory.boolValue) {
            throw ValidationError("--out writes .png, .jpg, .jpeg or .webp files, not .\(ext)")
        }
    }

    mutating func run() throws {
        let inputs = Self.expand(files)
        let targetSizing = TargetSizing(dimensions: target?.size, contentMode: mode)
        let outputs = try OutputPaths(out: out, inputCount: inputs.count)
        var failures = 0
        var lines: [String] = []
        for (index, file) in inputs.enumerated() {
            let report = decode(file, target: targetSizing, writeTo: outputs.path(for: file, index: index))
            if report.failed { failures += 1 }
            output.say(report.textLine())
            let line = report.jsonLine()
            lines.append(line)
            // One line per file as it is decoded: a crash on the next file leaves the earlier reports out.
            if output.json { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
        }
        try output.writeFile(Data(lines.map { $0 + "\n" }.joined().utf8))
        if failures > 0 { throw ExitCode(1) }
    }

    private func decode(_ file: String, target: TargetSizing, writeTo outPath: String?) -> DecodeReport {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: file))
        } catch {
            return .failure(file: file, message: "cannot read file: \(error.localizedDescription)",
                            code: 0, name: "fileUnreadable")
        }
        let start = ContinuousClock.now
        do {
            let decoded = try CodecCatalogue.shared.decode(data, target: target)
            let elapsed = ContinuousClock.now - start
            if let outPath {
                let (type, quality) = Self.outputFormat(of: outPath)
                let encoded = try CodecCatalogue.shared.encode(ImageContainer(bitmap: decoded.container.bitmap), as: type,
                                                               quality: quality)
                try encoded.write(to: URL(fileURLWithPath: outPath))
            }
            return .success(file: file, decoded: decoded, milliseconds: elapsed.milliseconds)
        } catch let error as ImageCodecError {
            return .failure(file: file, message: error.description, code: error.code, name: error.codeName)
        } catch {
            return .failure(file: file, message: "\(error)", code: 0, name: "writeFailed")
        }
    }

    /// The format `--out`'s extension names (PNG for any other), and the quality to encode at.
    static func outputFormat(of path: String) -> (ImageType, Double) {
        switch (path as NSString).pathExtension.lowercased() {
        case "jpg", "jpeg": (.jpeg, 0.9)
        case "webp": (.webp, 1)
        default: (.png, 1)
        }
    }

    /// Files as given, with directories replaced by their regular files in name order.
    static func expand(_ paths: [String]) -> [String] {
        paths.flatMap { path -> [String] in
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue,
                  let walker = FileManager.default.enumerator(atPath: path)
            else { return [path] }
            return walker.compactMap { $0 as? String }
                .map { (path as NSString).appendingPathComponent($0) }
                .filter { var dir: ObjCBool = false
                    return FileManager.default.fileExists(atPath: $0, isDirectory: &dir) && !dir.boolValue }
                .sorted()
        }
    }
}

/// Where `--out` writes each decoded file.
private struct OutputPaths {
    private let out: String?
    private let isDirectory: Bool

    init(out: String?, inputCount: Int) throws {
        self.out = out
        var existingDirectory: ObjCBool = false
        let exists = out.map { FileManager.default.fileExists(atPath: $0, isDirectory: &existingDirectory) } ?? false
        isDirectory = out != nil && (inputCount > 1 || out!.hasSuffix("/") || (exists && existingDirectory.boolValue))
        if isDirectory, let out {
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        }
    }

    func path(for file: String, index: Int) -> String? {
        guard let out else { return nil }
        guard isDirectory else { return out }
        let base = ((file as NSString).lastPathComponent as NSString).deletingPathExtension
        return (out as NSString).appendingPathComponent("\(base).png")
    }
}

/// `--target WxH`.
struct TargetOption: ExpressibleByArgument {
    let size: PixelSize
    init?(argument: String) {
        let parts = argument.lowercased().split(separator: "x")
        guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]), width > 0, height > 0 else {
            return nil
        }
        size = PixelSize(width: width, height: height)
    }
}

extension ContentMode: ExpressibleByArgument {}

extension Duration {
    var milliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }
}
