/// A size in whole pixels.
///
/// Images, targets and limits are all measured in pixels: there is no point/scale distinction on Linux.
public struct PixelSize: Hashable, Sendable, CustomStringConvertible {
    public var width: Int
    public var height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// `width × height`, saturating instead of overflowing for hostile headers.
    public var area: Int {
        let (product, overflow) = width.multipliedReportingOverflow(by: height)
        return overflow ? Int.max : product
    }

    /// `true` when either side is zero or negative.
    public var isEmpty: Bool { width <= 0 || height <= 0 }

    public var description: String { "\(width)x\(height)" }
}
