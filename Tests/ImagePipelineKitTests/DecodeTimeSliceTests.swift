import Testing
@testable import ImagePipelineKit

@Suite("A decoding thread's scheduler time slice")
struct DecodeTimeSliceTests {
    struct Failure: Error {}

    @Test("The thread asks for the slice while the body runs, and for its previous one after, even when it throws")
    func setAndRestore() throws {
        let before = try #require(DecodeTimeSlice.current)
        let inside = DecodeTimeSlice.run(.microseconds(100)) { DecodeTimeSlice.current }
        // Linux 6.12 and later report the slice a thread runs with (the kernel's default unless asked); an older
        // kernel reports 0 and ignores the request.
        if before != 0 { #expect(inside == 100_000) }
        #expect(DecodeTimeSlice.current == before)

        #expect(throws: Failure.self) { try DecodeTimeSlice.run(.microseconds(200)) { throw Failure() } }
        #expect(DecodeTimeSlice.current == before)
    }

    @Test("No slice leaves the thread as it is")
    func noSlice() throws {
        let before = try #require(DecodeTimeSlice.current)
        #expect(DecodeTimeSlice.run(nil) { DecodeTimeSlice.current } == before)
    }

    @Test("The configuration's slice is off by default and keeps what it is given")
    func configuration() {
        let configuration = GlobalConfiguration()
        #expect(configuration.decodeTimeSlice == nil)
        configuration.decodeTimeSlice = .microseconds(100)
        #expect(configuration.decodeTimeSlice == .microseconds(100))
    }
}
