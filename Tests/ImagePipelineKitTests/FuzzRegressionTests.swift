import Foundation
import Testing
@testable import ImagePipelineKit

/// Inputs the fuzzers (Fuzz/, `make fuzz`) found or minimised, kept so that what was found once stays found.
///
/// `fuzz-regressions/images/` holds decoder inputs: each goes through every built-in decoder, in one go and
/// as sessions fed in chunks of several sizes, and must end in an image or an ``ImageCodecError`` (a crash
/// kills the test process, which fails the run). `fuzz-regressions/http/` holds inputs of the HTTP-values
/// target: a status selector byte, then `Name: value` lines.
@Suite("Fuzz regressions (Fixtures/fuzz-regressions)")
struct FuzzRegressionTests {
    static let limits = DecodingLimits(maxPixels: 1 << 20, maxDimension: 4096, maxFrames: 16, maxBytes: 24 << 20)
    static let decoders: [any ImageDecoder] = [JPEGDecoder(), PNGDecoder(), GIFDecoder(), WebPDecoder(), AVIFDecoder(), JPEGXLDecoder()]
    static let thumbnail = TargetSizing(dimensions: PixelSize(width: 37, height: 23), contentMode: .fill)

    static func files(_ folder: String) throws -> [URL] {
        let directory = Fixtures.url("fuzz-regressions/\(folder)")
        return try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { !$0.lastPathComponent.hasPrefix(".") }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    @Test("Every image input decodes or fails with a typed error, through every decoder, whole and at a thumbnail")
    func oneShot() throws {
        let files = try Self.files("images")
        #expect(!files.isEmpty, "no regression inputs: the directory should hold at least the seeded ones")
        for file in files {
            let data = try Data(contentsOf: file)
            for decoder in Self.decoders {
                for target in [TargetSizing.original, Self.thumbnail] {
                    let configuration = DecoderConfiguration(limits: Self.limits, preferredSizing: target)
                    do {
                        let image = try decoder.decode(data, target: target, configuration: configuration)
                        #expect(image.container.dimensions == target.scaledSize(of: image.properties.dimensions),
                                "\(file.lastPathComponent) with \(type(of: decoder))")
                    } catch {
                        #expect(error is ImageCodecError, "\(file.lastPathComponent) with \(type(of: decoder)): \(error)")
                    }
                }
            }
        }
    }

    @Test("Every image input, fed to every decoder's session in chunks of 1, 3, 61 and 4096 bytes with renders between, ends in an image or a typed error")
    func chunkedSessions() throws {
        for file in try Self.files("images") {
            let data = try Data(contentsOf: file)
            for decoder in Self.decoders {
                for chunk in [1, 3, 61, 4096] {
                    let name = "\(file.lastPathComponent) with \(type(of: decoder)) in \(chunk)-byte chunks"
                    do {
                        try Self.feed(data, to: decoder, chunk: chunk, name: name)
                    } catch {
                        #expect(error is ImageCodecError, "\(name): \(error)")
                    }
                }
            }
        }
    }

    /// Appends `data` in `chunk`-byte pieces, rendering whatever each new frame or scan shows, then finishes.
    static func feed(_ data: Data, to decoder: any ImageDecoder, chunk: Int, name: String) throws {
        let session = decoder.makeSession(configuration: DecoderConfiguration(limits: limits), expectedByteCount: data.count)
        var offset = 0
        while offset < data.count {
            let end = min(data.count, offset + chunk)
            let progress = try session.append(data.subdata(in: offset..<end))
            offset = end
            if progress >= .didLoadFrame { try render(session, .anyProgress, name: name) }
        }
        _ = try session.finish()
        try render(session, .completeImage, name: name)
        try render(session, .fullFrameProgress, name: name)
    }

    static func render(_ session: any ImageDecodingSession, _ mode: RenderMode, name: String) throws {
        for target in [TargetSizing.original, thumbnail] {
            guard let container = try session.render(mode, target: target) else { continue }
            let properties = try #require(session.properties, "\(name): a render before the headers")
            #expect(container.dimensions == target.scaledSize(of: properties.dimensions), "\(name)")
        }
    }

    @Test("An HTTP-date whose year does not fit four (or, in RFC 850 form, two) digits is refused, not a trap")
    func httpDateYearOverflow() {
        #expect(HTTPDate.parse("Sun, 06 Nov 99999999999 08:49:37 GMT") == nil)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 9223372036854775807") == nil)
        #expect(HTTPDate.parse("Sunday, 06-Nov-9223372036854775807 08:49:37 GMT") == nil)
        // The three forms RFC 9110 names still read as the same instant.
        let expected = Date(timeIntervalSince1970: 784_111_777)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == expected)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == expected)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == expected)
    }

    @Test("Every HTTP input: dates, Content-Range and redirects are read without a trap")
    func httpValues() throws {
        let base = URL(string: "https://images.example.com/a/b.jpg")!
        for file in try Self.files("http") {
            let input = try Data(contentsOf: file)
            let text = String(decoding: input.dropFirst(), as: UTF8.self)
            var headers = DownloadHeaders()
            for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
                _ = HTTPDate.parse(line)
                guard let colon = line.firstIndex(of: ":") else { continue }
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                _ = HTTPDate.parse(value)
                headers.add(name: String(line[..<colon]), value: value)
            }
            let first = String(text.prefix { $0 != "\n" })
            headers.add(name: "Content-Range", value: first)
            headers.add(name: "Location", value: first)
            let response = DownloadResponse(statusCode: 206, headers: headers, url: base, expectedContentLength: nil)
            _ = response.contentRangeStart
            _ = response.contentRangeTotal
            // A resume never sends a weak ETag as If-Range, even one the server also sent as Last-Modified.
            let partial = PartialImageData(data: Data([0xFF, 0xD8]), url: base, dimensions: nil, expectedByteCount: 100,
                                           lastModified: headers["Last-Modified"], entityTag: headers["ETag"])
            if let validator = partial.ifRangeValidator {
                #expect(!validator.hasPrefix("W/"), "\(file.lastPathComponent): If-Range \(validator)")
            }
            if let location = DownloadRedirectPolicy.redirectLocation(statusCode: 302, headers: headers) {
                _ = DownloadRedirectPolicy.evaluate(location: location, from: base, redirectsFollowed: 0,
                                                    currentHeaders: headers, limits: DownloadLimits())
            }
        }
    }
}
