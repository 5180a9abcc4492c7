import Foundation
import Testing

import ObjectGraph
@testable import ObjectGraphCore

/// Parts of the compiled-model archive the fixtures do not use, read from a small archive built for
/// this test (by Python's plistlib, in NSKeyedArchiver's layout): the flags of archives written
/// before iOS 11 (separate booleans, no `_P`), archived NSDecimalNumber and NSDate defaults,
/// external storage and preserve-after-deletion flags, an entity's version hash modifier.
@Suite("Compiled model features")
struct CompiledModelFeatureTests {
    private static let archive = Data(base64Encoded: [
            "YnBsaXN0MDDUAQIDBAUGbnBZJGFyY2hpdmVyWCRvYmplY3RzVCR0b3BYJHZlcnNpb25fEA9OU0tleWVkQXJjaGl2ZXKvEBkHCA4R",
            "FRgdICMwNDpDRFFSQ1FZY2RjZWlqVSRudWxs0gkKCwxYJGNsYXNzZXNaJGNsYXNzbmFtZaIMDV8QFE5TTWFuYWdlZE9iamVjdE1v",
            "ZGVsWE5TT2JqZWN00gkKDxCiEA1fEBNOU0VudGl0eURlc2NyaXB0aW9u0gkKEhOjExQNXxAWTlNBdHRyaWJ1dGVEZXNjcmlwdGlv",
            "bl8QFU5TUHJvcGVydHlEZXNjcmlwdGlvbtIJChYXohcNXE5TRGljdGlvbmFyedIJChkapBobHA1fEA9OU0RlY2ltYWxOdW1iZXJY",
            "TlNOdW1iZXJXTlNWYWx1ZdIJCh4foh8NVk5TRGF0ZdIJCiEioiINVU5TU2V01yQlJicoKSorLC0uLy4sViRjbGFzc1pOUy5jb21w",
            "YWN0W05TLmV4cG9uZW50WU5TLmxlbmd0aFtOUy5tYW50aXNzYV5OUy5tYW50aXNzYS5ib1tOUy5uZWdhdGl2ZYAFCRP/////////",
            "/xABTxAQfQAAAAAAAAAAAAAAAAAAANIkMTIzV05TLnRpbWWABiNArCAAAAAAANMkNTY3ODlaTlNFbnRpdGllc18QFE5TVmVyc2lv",
            "bklkZW50aWZpZXJzgAGAFoAY1SQ7DDw9Pj9AQUJcTlNFbnRpdHlOYW1lXE5TUHJvcGVydGllc18QFU5TVmVyc2lvbkhhc2hNb2Rp",
            "ZmllcoACgBOACoASgBRVcHJpY2XXJEVGR0hJSktMTU5PLFBfEA9OU0F0dHJpYnV0ZVR5cGVeTlNEZWZhdWx0VmFsdWVYTlNFbnRp",
            "dHlaTlNGbGFnc0tleVxOU0lzT3B0aW9uYWxeTlNQcm9wZXJ0eU5hbWWAAxEBkIAIgAsQAIAMVHdoZW7YJEVGR0hJU0pLVFVOVldX",
            "WF1OU0lzVHJhbnNpZW50EQOEgAkQFAiADtMkWltcXWBXTlMua2V5c1pOUy5vYmplY3RzgASiXl+AEIARomFigA2AD1RJdGVtVmxl",
            "Z2FjedMkWltcZmihZ4AVoU5SdjnSJFtrbIAHoW2AF9FvQFRyb290EgABhqAACAARABsAJAApADIARABgAGYAawB0AH8AggCZAKIA",
            "pwCqAMAAxQDJAOIA+gD/AQIBDwEUARkBKwE0ATwBQQFEAUsBUAFTAVkBaAFvAXoBhgGQAZwBqwG3AbkBugHDAcUB2AHdAeUB5wHw",
            "AfcCAgIZAhsCHQIfAioCNwJEAlwCXgJgAmICZAJmAmwCewKNApwCpQKwAr0CzALOAtEC0wLVAtcC2QLeAu8C/QMAAwIDBAMFAwcD",
            "DgMWAyEDIwMmAygDKgMtAy8DMQM2Az0DRANGA0gDSgNNA1IDVANWA1gDWwNgAAAAAAAAAgEAAAAAAAAAcQAAAAAAAAAAAAAAAAAA",
            "A2U=",
    ].joined())!

    @Test("pre-iOS 11 flags, archived decimal and date defaults, storage flags and modifiers load")
    func archivedFeatures() throws {
        let model = try ManagedObjectModel(compiledModelData: Self.archive, source: URL(fileURLWithPath: "/test/Item.mom"))
        #expect(model.versionIdentifiers == ["v9"])
        let item = try #require(model.entitiesByName["Item"])
        #expect(item.versionHashModifier == "legacy")
        let price = try #require(item.attributesByName["price"])
        #expect(price.attributeType == .decimal && price.isOptional)
        #expect(price.defaultValue as? Decimal == Decimal(string: "-12.5"))
        let when = try #require(item.attributesByName["when"])
        #expect(when.attributeType == .date && !when.isOptional)
        #expect(when.defaultValue as? Date == Date(timeIntervalSinceReferenceDate: 3600))
        #expect(when.allowsExternalBinaryDataStorage && when.preservesValueInHistoryOnDeletion)
        #expect(model.unsupportedFeatures.isEmpty)
    }

    @Test("the same model written as Xcode XML hashes the same")
    func archiveAndXMLAgree() throws {
        let compiled = try ManagedObjectModel(compiledModelData: Self.archive, source: URL(fileURLWithPath: "/test/Item.mom"))
        let xml = """
            <model userDefinedModelVersionIdentifier="v9">
                <entity name="Item" versionHashModifier="legacy">
                    <attribute name="price" optional="YES" attributeType="Decimal" defaultValueString="-12.5"/>
                    <attribute name="when" attributeType="Date" allowsExternalBinaryDataStorage="YES" preserveAfterDeletion="YES"/>
                </entity>
            </model>
            """
        let contents = try XcodeModelReader.read(Data(xml.utf8))
        let fromXML = ManagedObjectModel(entities: contents.entities)
        #expect(fromXML.entityVersionHashesByName == compiled.entityVersionHashesByName)
        #expect(fromXML.versionChecksum == compiled.versionChecksum)
    }
}
