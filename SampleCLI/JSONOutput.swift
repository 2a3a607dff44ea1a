import ArgumentParser
import Foundation

/// The one convention for machine-readable output, shared by every command that reports: `--json` writes the
/// JSON to standard output (and the human-readable text goes to standard error, so standard output is JSON
/// alone), `--json-file PATH` writes it to a file (the text stays on standard output). Both may be given.
struct JSONOutput: ParsableArguments {
    @Flag(help: "Write the report as JSON to standard output; the text report goes to standard error.")
    var json = false

    @Option(name: .customLong("json-file"), help: ArgumentHelp("Write the report as JSON to this file.", valueName: "FILE"))
    var jsonFile: String?

    /// Whether any JSON was asked for.
    var isRequested: Bool { json || jsonFile != nil }

    /// Prints human-readable text: to standard output, or to standard error when standard output carries JSON.
    func say(_ text: String, terminator: String = "\n") {
        let handle = json ? FileHandle.standardError : FileHandle.standardOutput
        handle.write(Data((text + terminator).utf8))
    }

    /// Writes the report: to standard output with `--json`, to the file with `--json-file`.
    func write(_ data: Data) throws {
        if json, !data.isEmpty {
            FileHandle.standardOutput.write(data)
            if data.last != UInt8(ascii: "\n") { FileHandle.standardOutput.write(Data("\n".utf8)) }
        }
        try writeFile(data)
    }

    /// Writes `data` to the `--json-file`, if one was given.
    func writeFile(_ data: Data) throws {
        guard let jsonFile else { return }
        do {
            try data.write(to: URL(fileURLWithPath: jsonFile))
        } catch {
            throw CommandFailure("cannot write \(jsonFile): \(error.localizedDescription)")
        }
    }

    /// Writes a report object (a dictionary of JSON values), keys sorted.
    func write(object: [String: Any]) throws {
        guard isRequested else { return }
        try write(JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys]))
    }

    /// Writes a report made of JSON lines (one object per item).
    func write(lines: [String]) throws {
        try write(Data(lines.map { $0 + "\n" }.joined().utf8))
    }
}

/// A failure at run time (not a usage error): the message on one line of standard error and exit status 1.
/// Usage errors are `ValidationError`s: the message, the usage text and exit status 64.
struct CommandFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
