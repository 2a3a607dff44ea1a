import CCodecsOnDemand
import Foundation
import Testing
@testable import ImagePipelineKit

/// libjxl and libavif are not linked: they load with the first decode of their format, so that a process that
/// never decodes either does not pay for loading them (and the codec libraries they pull in) at start.
@Suite("AVIF and JPEG XL libraries loaded on first use")
struct CodecsOnDemandTests {
    @Test("This process started without libjxl, libavif or libhwy among the libraries it needs")
    func notLinked() throws {
        // ldd lists every library the dynamic loader maps at start, the libraries' own needs included.
        let ldd = Process()
        ldd.executableURL = URL(fileURLWithPath: "/usr/bin/ldd")
        ldd.arguments = [try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")]
        let output = Pipe()
        ldd.standardOutput = output
        try ldd.run()
        let listed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        ldd.waitUntilExit()
        #expect(ldd.terminationStatus == 0)
        #expect(listed.contains("libjpeg"), "the list is the process's libraries")
        for library in ["libjxl", "libavif", "libhwy"] {
            #expect(!listed.contains(library), "\(library) is linked")
        }
    }

    @Test("Both libraries load on demand here, where they are installed")
    func loads() {
        #expect(ipk_jxl_load() == nil)
        #expect(ipk_avif_load() == nil)
    }

    @Test("A library that is missing, or of another version, is refused with a message that says which")
    func refusals() throws {
        func open(_ names: [String], accepting: Bool) -> (opened: Bool, message: String) {
            var error = [CChar](repeating: 0, count: 256)
            let matches: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { _ in 1 }
            let refuses: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { _ in 0 }
            let copies = names.map { strdup($0) }
            defer { copies.forEach { free($0) } }
            let handle = (copies.map { UnsafePointer($0) } + [nil]).withUnsafeBufferPointer { list in
                ipk_open_library(list.baseAddress, accepting ? matches : refuses, "libexample", &error, error.count)
            }
            if let handle { dlclose(handle) }
            let message = error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            return (handle != nil, String(decoding: message, as: UTF8.self))
        }
        let missing = open(["libipk-none.so.1", "libipk-none.so"], accepting: true)
        #expect(!missing.opened)
        #expect(missing.message == "libexample is not installed (looked for libipk-none.so.1 to libipk-none.so)")
        let otherVersion = open(["libjpeg.so.62"], accepting: false)
        #expect(!otherVersion.opened)
        #expect(otherVersion.message == "libexample is installed in a version other than the one this build was made with")
        #expect(open(["libipk-none.so.1", "libjpeg.so.62"], accepting: true).opened)
    }
}
