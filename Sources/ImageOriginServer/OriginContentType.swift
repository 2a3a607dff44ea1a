/// `Content-Type` values by file extension, for directory files and for assets set without a content type.
enum OriginContentType {
    /// The type sent for an extension nobody listed.
    static let fallback = "application/octet-stream"

    private static let byExtension: [String: String] = [
        "jpg": "image/jpeg", "jpeg": "image/jpeg", "jpe": "image/jpeg", "jfif": "image/jpeg",
        "png": "image/png", "apng": "image/apng", "gif": "image/gif", "webp": "image/webp",
        "avif": "image/avif", "heic": "image/heic", "heif": "image/heif", "jxl": "image/jxl",
        "bmp": "image/bmp", "ico": "image/vnd.microsoft.icon", "tif": "image/tiff", "tiff": "image/tiff",
        "svg": "image/svg+xml",
        "txt": "text/plain; charset=utf-8", "html": "text/html; charset=utf-8", "htm": "text/html; charset=utf-8",
        "css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8",
        "json": "application/json", "xml": "application/xml",
        "mp4": "video/mp4", "webm": "video/webm", "bin": fallback,
    ]

    /// The type for the last path component's extension of `path` (case-insensitive), or ``fallback``.
    static func forPath(_ path: String) -> String {
        let name = path.split(separator: "/", omittingEmptySubsequences: false).last ?? ""
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return fallback }
        return byExtension[name[name.index(after: dot)...].lowercased()] ?? fallback
    }
}
