import Foundation

/// A check every property list ObjectGraph did not write passes before Foundation reads it.
///
/// Foundation's XML property list reader stops the program, instead of throwing, on bytes that
/// are not UTF-8 where it skips whitespace (a fatal error in swift-foundation's
/// `BufferView._decodeScalars`, reached from `XMLPlistMap.Value._skipIntegerWhitespace`; found by
/// the xml-store fuzz target with `<integer>` followed by `0xFF` bytes). A file another program
/// wrote (an atomic store) is therefore refused here when it is an XML property list that is not
/// UTF-8. `PropertyListSerialization` (a store's `Z_PLIST`, a model bundle's `.plist`) throws on
/// the same bytes in Swift 6.3.1, but its readers pass here too, so that a later Foundation sharing
/// the decoder's code cannot stop the program. A model bundle's error names the byte; a store's
/// `Z_PLIST` is refused as metadata that cannot be read, as before (its reader returns no reason).
/// Core Data and ObjectGraph write XML property lists in UTF-8 only.
enum PropertyListInput {
    /// Nil when `data` is a binary property list (it starts with `bplist`) or is UTF-8 throughout;
    /// otherwise what is wrong and at which byte.
    static func encodingProblem(_ data: Data) -> String? {
        if data.starts(with: "bplist".utf8) { return nil }
        return data.withUnsafeBytes { raw in utf8Problem(raw.bindMemory(to: UInt8.self)) }
    }

    /// Nil when `bytes` are UTF-8 throughout; otherwise the offset of the first byte that is not.
    static func utf8Problem(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded): offset += encoded.count
            case .emptyInput: return nil
            case .error: return "it is not UTF-8 at byte \(offset)"
            }
        }
    }
}
