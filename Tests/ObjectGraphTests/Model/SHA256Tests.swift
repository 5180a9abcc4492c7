import Foundation
import Testing

import ObjectGraph
@testable import ObjectGraphCore

@Suite("SHA-256")
struct SHA256Tests {
    private func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }

    @Test("digests match the FIPS 180-2 test vectors")
    func fipsVectors() {
        #expect(hex(SHA256.hash(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(hex(SHA256.hash([UInt8]())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(hex(SHA256.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)))
            == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        let long = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"
        #expect(hex(SHA256.hash(Array(long.utf8))) == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
    }

    @Test("a million 'a's digest to the FIPS vector")
    func millionAs() {
        #expect(hex(SHA256.hash([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)))
            == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("feeding a message in pieces gives the digest of the whole, at every split around a block boundary")
    func incremental() {
        let message = Array((0..<200).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let whole = SHA256.hash(message)
        for split in [0, 1, 55, 56, 63, 64, 65, 119, 128, 199, 200] {
            var hasher = SHA256()
            hasher.update(message[..<split])
            hasher.update(message[split...])
            #expect(hasher.finalize() == whole, "split at \(split)")
        }
    }

    @Test("integers are fed in little-endian order, as Core Data's C code feeds them")
    func littleEndianIntegers() {
        var hasher = SHA256()
        hasher.update(littleEndian: UInt32(700))
        #expect(hasher.finalize() == SHA256.hash([0xBC, 0x02, 0x00, 0x00]))
    }
}

@Suite("SHA-512")
struct SHA512Tests {
    private func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }

    @Test("digests match the FIPS 180-2 test vectors")
    func fipsVectors() {
        #expect(hex(SHA512.hash(Array("abc".utf8)))
            == "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f")
        #expect(hex(SHA512.hash([UInt8]()))
            == "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e")
        let long = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"
        #expect(hex(SHA512.hash(Array(long.utf8)))
            == "8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909")
    }

    @Test("a million 'a's digest to the FIPS vector")
    func millionAs() {
        #expect(hex(SHA512.hash([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)))
            == "e718483d0ce769644e2e42c7bc15b4638e1f98b13b2044285632a803afa973ebde0ff244877ea60a4cb0432ce577c31beb009c5c2c49aa2e4eadb217ad8cc09b")
    }
}
