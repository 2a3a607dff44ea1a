/// The library's name and version, as downloads name it in `User-Agent` (``DownloadHeaders/defaultUserAgent``).
public enum LibraryVersion {
    /// `ImagePipelineKit`.
    public static let name = "ImagePipelineKit"
    /// The version, as in the changelog: the release being prepared carries a `-dev` suffix until it is tagged.
    public static let version = "0.2.0-dev"
}
