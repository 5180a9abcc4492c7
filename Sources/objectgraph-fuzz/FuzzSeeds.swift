import Foundation
import ObjectGraphCore

/// The seed corpus of every target (`Fuzz/Corpus/<target>/`): valid inputs that ObjectGraph writes
/// or reads, small enough to mutate quickly. The compiled-model seeds are the model caches of the
/// store seeds, inflated (Scripts/fuzz --seeds).
enum FuzzSeeds {
    static let predicates = [
        "TRUEPREDICATE",
        "int64 > 3 AND string BEGINSWITH[cd] 'it'",
        "string MATCHES '.*[0-9]' OR string LIKE[c] '*é*'",
        "int16 BETWEEN {-2, 5} AND NOT (double < 0.5)",
        "folder.name == 'Inbox' && date >= CAST(0, 'NSDate')",
        "ANY tags.name IN {'tag 0', 'tag 1'}",
        "SUBQUERY(children, $c, $c.int64 > 0).@count >= 1",
        "children.@count == 2 OR ANY tags.name != nil",
        "ALL tags.name CONTAINS 'tag' AND NONE children.boolean == YES",
        "decimal * 2 + float / 3 - -int32 % 7 == 25.0",
        "uuid == nil OR url ENDSWITH '/1' OR data != nil",
        "SELF != nil OR string ==[n] \"item \\u0031\"",
        "tags.@count > 0 AND (int64 + 1) * 2 < 10 AND string != \"\"",
        "date < CAST(1e9, 'NSDate') AND $x == nil",
        "string IN %@ AND int64 == %d AND %K == %@",
        "(int64 > 1 OR (int64 < 0 AND (boolean = TRUE))) && double != 1e-3",
    ]

    static let xcodeModel = """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" lastSavedToolsVersion="22758" systemVersion="23E224" minimumToolsVersion="Automatic" sourceLanguage="Swift" userDefinedModelVersionIdentifier="2">
            <entity name="Folder" representedClassName="Folder" syncable="YES">
                <attribute name="name" attributeType="String" minValueString="1" maxValueString="40" regularExpressionString="[a-z ]+" defaultValueString="Inbox"/>
                <relationship name="items" optional="YES" toMany="YES" deletionRule="Cascade" destinationEntity="Item" inverseName="folder" inverseEntity="Item"/>
                <uniquenessConstraints>
                    <uniquenessConstraint>
                        <constraint value="name"/>
                    </uniquenessConstraint>
                </uniquenessConstraints>
            </entity>
            <entity name="Item" representedClassName="Item" isAbstract="NO" versionHashModifier="v2" syncable="YES">
                <attribute name="int16" optional="YES" attributeType="Integer 16" defaultValueString="0" usesScalarValueType="YES"/>
                <attribute name="int32" optional="YES" attributeType="Integer 32" minValueString="-5" maxValueString="5" usesScalarValueType="YES"/>
                <attribute name="int64" attributeType="Integer 64" defaultValueString="7" usesScalarValueType="YES"/>
                <attribute name="decimal" optional="YES" attributeType="Decimal" defaultValueString="1.25"/>
                <attribute name="double" optional="YES" attributeType="Double" defaultValueString="0.5" usesScalarValueType="YES"/>
                <attribute name="float" optional="YES" attributeType="Float" defaultValueString="1" usesScalarValueType="YES"/>
                <attribute name="boolean" optional="YES" attributeType="Boolean" defaultValueString="YES" usesScalarValueType="YES"/>
                <attribute name="date" optional="YES" attributeType="Date" defaultDateTimeInterval="86400" usesScalarValueType="NO"/>
                <attribute name="data" optional="YES" attributeType="Binary" allowsExternalBinaryDataStorage="YES"/>
                <attribute name="uuid" optional="YES" attributeType="UUID" usesScalarValueType="NO"/>
                <attribute name="url" optional="YES" attributeType="URI" defaultValueString="https://example.com/a?b=1&amp;c=2"/>
                <attribute name="json" optional="YES" attributeType="Transformable" valueTransformerName="NSSecureUnarchiveFromData"/>
                <attribute name="scratch" optional="YES" transient="YES" attributeType="String"/>
                <attribute name="derived" optional="YES" attributeType="Integer 64" derived="YES" derivationExpression="tags.@count"/>
                <relationship name="folder" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Folder" inverseName="items" inverseEntity="Folder"/>
                <relationship name="tags" optional="YES" toMany="YES" maxCount="8" deletionRule="Nullify" destinationEntity="Tag" inverseName="items" inverseEntity="Tag"/>
                <relationship name="children" optional="YES" toMany="YES" deletionRule="Deny" ordered="YES" destinationEntity="Item" inverseName="parent" inverseEntity="Item"/>
                <relationship name="parent" optional="YES" maxCount="1" deletionRule="No Action" destinationEntity="Item" inverseName="children" inverseEntity="Item" elementID="owner"/>
                <fetchedProperty name="recent" optional="YES">
                    <fetchRequest name="fetchedPropertyFetchRequest" entity="Item" predicateString="int64 &gt; 3"/>
                </fetchedProperty>
                <fetchIndex name="byInt64">
                    <fetchIndexElement property="int64" type="Binary" order="descending"/>
                </fetchIndex>
                <userInfo>
                    <entry key="note" value="fuzz seed"/>
                </userInfo>
            </entity>
            <entity name="Task" parentEntity="Item" elementID="Job" syncable="YES">
                <attribute name="due" optional="YES" attributeType="Date" usesScalarValueType="NO"/>
            </entity>
            <entity name="Tag" syncable="YES">
                <attribute name="name" optional="YES" attributeType="String"/>
                <relationship name="items" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Item" inverseName="tags" inverseEntity="Item"/>
            </entity>
            <fetchRequest name="AllItems" entity="Item" predicateString="int64 &gt;= 0"/>
            <configuration name="Local">
                <memberEntity name="Folder"/>
                <memberEntity name="Item"/>
                <memberEntity name="Task"/>
                <memberEntity name="Tag"/>
            </configuration>
        </model>

        """

    /// Writes every target's seeds into `corpus/<target>/`.
    static func write(to corpus: URL) throws {
        let manager = FileManager.default
        func folder(_ target: FuzzTarget) throws -> URL {
            let url = corpus.appendingPathComponent(target.rawValue)
            try manager.createDirectory(at: url, withIntermediateDirectories: true)
            return url
        }
        let predicateFolder = try folder(.predicate)
        for (i, predicate) in predicates.enumerated() {
            try Data(predicate.utf8).write(to: predicateFolder.appendingPathComponent(String(format: "seed-%02d", i)))
        }
        try Data(xcodeModel.utf8).write(to: try folder(.xcodeModel).appendingPathComponent("seed-contents"))

        let model = FuzzModel.make()
        let scratch = manager.temporaryDirectory.appendingPathComponent("objectgraph-fuzz-seeds-\(UUID().uuidString)")
        try manager.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? manager.removeItem(at: scratch) }
        for (type, target) in [(StoreType.xml, FuzzTarget.xmlStore), (.binary, .binaryStore), (.sqlite, .sqliteOpen)] {
            for populated in [false, true] {
                let url = scratch.appendingPathComponent("\(populated ? "populated" : "empty").\(type.rawValue)")
                let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
                let store = try coordinator.addPersistentStore(type: type, at: url)
                if populated {
                    let context = ManagedObjectContext(concurrencyType: .confinement)
                    context.persistentStoreCoordinator = coordinator
                    FuzzModel.populate(context)
                    try context.save()
                }
                try coordinator.removePersistentStore(store)
                let seed = try folder(target).appendingPathComponent("seed-\(populated ? "populated" : "empty")")
                try? manager.removeItem(at: seed)
                try manager.copyItem(at: url, to: seed)
            }
        }
    }
}
