extension CodecCatalogue {
    /// The codecs ``shared`` starts with.
    public static var builtInCodecs: [any ImageCodec] {
        [
            JPEGCodec(),
            PNGCodec(),
            GIFCodec(),
            WebPCodec(),
        ]
    }
}
