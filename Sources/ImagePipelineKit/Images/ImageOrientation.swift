/// EXIF orientation (tag 0x0112): how stored pixels must be transformed to stand upright.
public enum ImageOrientation: Int, Sendable, CaseIterable {
    case up = 1, upMirrored = 2, down = 3, downMirrored = 4
    case leftMirrored = 5, right = 6, rightMirrored = 7, left = 8

    /// The orientation for an EXIF value; anything outside 1...8 counts as ``up`` (as browsers do).
    public init(exifValue: Int) {
        self = ImageOrientation(rawValue: exifValue) ?? .up
    }

    /// Whether width and height trade places (orientations 5–8).
    public var swapsDimensions: Bool { rawValue >= 5 }

    /// Displayed size of a stored image of `size`.
    public func displayedSize(ofStored size: PixelSize) -> PixelSize {
        swapsDimensions ? PixelSize(width: size.height, height: size.width) : size
    }
}
