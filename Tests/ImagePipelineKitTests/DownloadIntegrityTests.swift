import Foundation
import Testing
@testable import ImagePipelineKit

/// The checks that keep a download from becoming a wrong image: what a resume may append to, and whether bytes
/// that ended without a declared length are the whole image.
@Suite("Download integrity: resume checks and image completeness")
struct DownloadIntegrityTests {
    static let images = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("SampleCLI/Images")

    @Test("A 206 continues a partial only when its start, total and validators are the partial's")
    func resumeChecks() {
        let partial = PartialImageData(data: Data(count: 100), url: URL(string: "http://x/a.jpg")!, dimensions: nil,
                                       expectedByteCount: 300, lastModified: "Tue, 01 Sep 2026 10:00:00 GMT",
                                       entityTag: "\"v1\"")
        func response(_ range: String, etag: String? = "\"v1\"", lastModified: String? = nil) -> DownloadResponse {
            var headers: DownloadHeaders = ["Content-Range": range]
            if let etag { headers.add(name: "ETag", value: etag) }
            if let lastModified { headers.add(name: "Last-Modified", value: lastModified) }
            return DownloadResponse(statusCode: 206, headers: headers, url: partial.url, expectedContentLength: 200)
        }
        #expect(partial.isContinued(by: response("bytes 100-299/300")))
        #expect(partial.isContinued(by: response("bytes 100-299/*")))
        #expect(partial.isContinued(by: response("bytes 100-299/300", etag: nil)))
        #expect(!partial.isContinued(by: response("bytes 0-299/300")))
        #expect(!partial.isContinued(by: response("bytes 100-399/400")))
        #expect(!partial.isContinued(by: response("bytes 100-299/300", etag: "\"v2\"")))
        #expect(!partial.isContinued(by: response("bytes 100-299/300", lastModified: "Wed, 02 Sep 2026 10:00:00 GMT")))
    }

    @Test("A resume's If-Range is a strong ETag, else a Last-Modified that is an HTTP-date, else there is no resume")
    func ifRangeValidator() {
        func validator(etag: String?, lastModified: String?) -> String? {
            PartialImageData(
                data: Data(count: 100), url: URL(string: "http://x/a.jpg")!, dimensions: nil, expectedByteCount: 300,
                lastModified: lastModified, entityTag: etag).ifRangeValidator
        }
        let date = "Tue, 01 Sep 2026 10:00:00 GMT"
        #expect(validator(etag: "\"v1\"", lastModified: date) == "\"v1\"")
        #expect(validator(etag: "W/\"v1\"", lastModified: date) == date)
        #expect(validator(etag: nil, lastModified: date) == date)
        // A server would read these as entity tags, the second one strong.
        #expect(validator(etag: "W/\"v1\"", lastModified: "W/\"v1\"") == nil)
        #expect(validator(etag: nil, lastModified: "\"v2\"") == nil)
        #expect(validator(etag: nil, lastModified: "yesterday") == nil)
        #expect(validator(etag: "W/\"v1\"", lastModified: nil) == nil)
    }

    @Test("Every bundled image is complete, every cut of it is not", arguments: [
        "skimage-rocket.jpg", "skimage-astronaut-progressive.jpg", "skimage-camera.png", "skimage-chelsea.webp",
        "fire.gif", "welcome2.gif",
    ])
    func completeness(name: String) throws {
        let data = try Data(contentsOf: Self.images.appendingPathComponent(name))
        #expect(ImageCompleteness.isComplete(data) == true)
        for fraction in [0.05, 0.3, 0.5, 0.9, 0.999] {
            let cut = data.prefix(Int(Double(data.count) * fraction))
            #expect(ImageCompleteness.isComplete(cut) == false, "\(name) cut at \(cut.count) of \(data.count) bytes")
        }
        #expect(ImageCompleteness.isComplete(data.dropLast()) == false)
    }

    @Test("ISO base media files are complete when their boxes tile the bytes; unknown formats are not judged")
    func boxesAndUnknown() {
        func box(_ type: String, _ payload: Int) -> Data {
            let size = UInt32(8 + payload)
            return Data([UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)])
                + Data(type.utf8) + Data(count: payload)
        }
        let avif = box("ftyp", 12) + box("meta", 40) + box("mdat", 1000)
        #expect(ImageCompleteness.isComplete(avif) == true)
        #expect(ImageCompleteness.isComplete(avif.dropLast(10)) == false)
        #expect(ImageCompleteness.isComplete(Data("hello, not an image".utf8)) == nil)
        #expect(ImageCompleteness.isComplete(Data()) == nil)
    }
}
