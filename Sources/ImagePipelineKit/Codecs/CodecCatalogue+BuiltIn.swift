extension CodecCatalogue {
    /// The codecs ``shared`` starts with, in the order a download's `Accept` header prefers them: the
    /// formats that compress best first (AVIF, JPEG XL, WebP), then PNG, JPEG and GIF.
    public static var builtInCodecs: [any ImageCodec] {
        [
            AVIFCodec(),
            JPEGXLCodec(),
            WebPCodec(),
            PNGCodec(),
            JPEGCodec(),
            GIFCodec(),
        ]
    }
}
