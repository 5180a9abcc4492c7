import Foundation

/// The checks every batch request's values pass before any store sees them: keys name stored
/// attributes, values have the attribute's type, required attributes have a value. A batch request
/// with one bad value is refused whole, before anything is written.
enum BatchValues {
    /// What every row of one batch insert is checked against, worked out once per request.
    struct InsertRows {
        let entity: EntityDescription
        /// The model's default for every property (`.null` for relationships).
        let defaults: [Value]
        /// The stored attributes that must have a value: their property indexes and names.
        let required: [(index: Int, name: String)]
        /// Whether the entity has uniqueness constraints, which make a row an upsert when it
        /// matches an existing one: such a row need not name every required attribute.
        let upserts: Bool
        /// The stored attributes a row may name, as plain values: a row's keys are matched and its
        /// values converted without retaining the model's objects once per value, which cost a
        /// batch insert of integers more than its conversions.
        let slots: [Slot]
        /// The index in ``slots`` of each name, for an entity with many attributes (a scan of the
        /// names costs less below that).
        let slotsByName: [String: Int]?
        /// The indices of the relationships and of the transient attributes: what a row from an
        /// object may not set, and what it sets that is not stored.
        let relationships: PropertyMask
        let transients: PropertyMask

        struct Slot {
            let name: String
            let index: Int
            let type: AttributeType
        }

        init(entity: EntityDescription) {
            self.entity = entity
            defaults = entity.properties.map { ($0 as? AttributeDescription)?.defaultStoredValue ?? .null }
            required = entity.storedAttributes.filter { !$0.isOptional }.map { ($0.index, $0.name) }
            upserts = !RelationalLayout.uniquenessConstraints(of: entity).isEmpty
            let slots = entity.storedAttributes.map { Slot(name: $0.name, index: $0.index, type: $0.attributeType) }
            self.slots = slots
            slotsByName = slots.count > 16 ? Dictionary(slots.indices.map { (slots[$0].name, $0) }, uniquingKeysWith: { first, _ in first }) : nil
            relationships = PropertyMask(entity.relationships.map(\.index))
            transients = PropertyMask(entity.attributes.filter(\.isTransient).map(\.index))
        }

        /// The slot of the stored attribute named `key`; nil for any other key.
        @inline(__always)
        func slot(forKey key: String) -> Int? {
            if let slotsByName { return slotsByName[key] }
            for i in slots.indices where slots[i].name == key { return i }
            return nil
        }
    }

    /// How many rows a slice of ``insertRows(_:_:)`` checks, at least.
    static let rowsPerSlice = 4096

    /// The rows of a batch insert, each checked as ``insertRow(_:number:_:)`` checks it. A large
    /// batch is checked in slices of at least ``rowsPerSlice`` rows at once, one per processor:
    /// a row's check reads only its dictionary and the request's entity, and on a batch of
    /// thousands of rows it is most of the time the request takes before its SQL. Each slice
    /// writes its rows in place in the result. The error thrown is the one a pass row by row
    /// would throw: that of the first bad row.
    ///
    /// - Throws: ``ObjectGraphError/validation`` naming the row, the entity and the key.
    static func insertRows(_ objects: [[String: any Sendable]], _ rows: InsertRows) throws -> [BatchRow] {
        let slices = Swift.min(ProcessInfo.processInfo.activeProcessorCount, objects.count / rowsPerSlice)
        guard slices > 1 else { return try objects.enumerated().map { try insertRow($1, number: $0, rows) } }
        let size = (objects.count + slices - 1) / slices
        // Per slice: the error that stopped it, and how many of its rows it wrote.
        var outcomes = [(error: (any Error)?, written: Int)](repeating: (nil, 0), count: slices)
        let checked = [BatchRow](unsafeUninitializedCapacity: objects.count) { buffer, initializedCount in
            outcomes.withUnsafeMutableBufferPointer { outcomesBuffer in
                nonisolated(unsafe) let buffer = buffer
                nonisolated(unsafe) let outcomes = outcomesBuffer
                // Each slice writes its own range of rows, and its own outcome, only.
                DispatchQueue.concurrentPerform(iterations: slices) { slice in
                    let range = (slice * size)..<Swift.min(objects.count, (slice + 1) * size)
                    for number in range {
                        do {
                            (buffer.baseAddress! + number).initialize(to: try insertRow(objects[number], number: number, rows))
                        } catch {
                            outcomes[slice].error = error
                            return
                        }
                        outcomes[slice].written += 1
                    }
                }
            }
            if outcomes.contains(where: { $0.error != nil }) {
                for (slice, outcome) in outcomes.enumerated() {
                    (buffer.baseAddress! + slice * size).deinitialize(count: outcome.written)
                }
                initializedCount = 0
            } else {
                initializedCount = objects.count
            }
        }
        if let error = outcomes.lazy.compactMap(\.error).first { throw error }
        return checked
    }

    /// One row of a batch insert: the model's defaults for the keys it does not name.
    ///
    /// - Throws: ``ObjectGraphError/validation`` naming the row, the entity and the key.
    static func insertRow(_ dictionary: [String: any Sendable], number: Int, _ rows: InsertRows) throws -> BatchRow {
        var values = rows.defaults
        var given = PropertyMask()
        // Made only for an error message, never once per row.
        func context() -> String { "Batch insert row \(number) of \(rows.entity.name)" }
        for (key, raw) in dictionary {
            // A stored attribute's slot, and its value when it needs no conversion; any other key
            // throws the error that says what it names.
            let index: Int, exact: Value?
            if let found = rows.slot(forKey: key) {
                index = rows.slots[found].index
                exact = Value.exactly(raw, storedAs: rows.slots[found].type)
            } else {
                index = try storedAttribute(key, of: rows.entity, context: context()).index
                exact = nil
            }
            values[index] = try exact ?? value(raw, for: rows.entity.properties[index] as! AttributeDescription, entity: rows.entity, context: context())
            given.insert(index)
        }
        return try row(values, given: given, number: number, rows)
    }

    /// One row of a batch insert from the object its handler filled
    /// (``BatchInsertRequest/managedObjectHandler``), taken out of the object, which starts the next
    /// row with the model's defaults. The properties set are the row's given keys; transformable
    /// values are encoded here, as a save encodes them.
    ///
    /// - Throws: ``ObjectGraphError/validation`` naming the row, the entity and the key: a
    ///   relationship set (a batch insert sets stored attributes only), a value of the wrong type
    ///   set through `setValue(_:forKey:)`, a transformable value that does not encode, a required
    ///   attribute without a value.
    static func insertRow(from object: ManagedObject, number: Int, _ rows: InsertRows) throws -> BatchRow {
        var (values, set, boxed) = object.takeBatchRow(restarting: rows.defaults)
        func context() -> String { "Batch insert row \(number) of \(rows.entity.name)" }
        // Asked of masks, not of the properties' descriptions: a row of ten values costs no retain of the model.
        if let index = set.intersection(rows.relationships).first(where: { _ in true }) {
            let name = rows.entity.properties[index].name
            throw ObjectGraphError(
                .validation, "\(context()): '\(name)' is a relationship; batch requests set stored attributes only; nothing was written",
                entityName: rows.entity.name, key: name)
        }
        let stored = set.subtracting(rows.transients)
        if !boxed.isEmpty {
            for index in stored {
                guard let raw = boxed.removeValue(forKey: index) else { continue }
                values[index] = try value(raw, for: rows.entity.properties[index] as! AttributeDescription, entity: rows.entity, context: context())
            }
        }
        return try row(values, given: stored, number: number, rows)
    }

    /// A row's values checked for its required attributes; `given` are the attributes the row set.
    private static func row(_ values: [Value], given: PropertyMask, number: Int, _ rows: InsertRows) throws -> BatchRow {
        var missing: String?
        for (index, name) in rows.required where values[index].isNull {
            if given.contains(index) {
                throw ObjectGraphError(
                    .validation, "Batch insert row \(number) of \(rows.entity.name) sets required attribute '\(name)' to nil; nothing was written",
                    entityName: rows.entity.name, key: name)
            }
            missing = missing ?? name
        }
        // A row that upserts an existing one need not name every required attribute: on an entity
        // with uniqueness constraints, the store decides (``BatchInsertPlan``).
        if let missing, !rows.upserts {
            throw missingRequired(missing, number: number, entity: rows.entity)
        }
        return BatchRow(values: values, given: given, missingRequired: missing)
    }

    /// The error of a row that would be inserted without a value for a required attribute.
    static func missingRequired(_ name: String, number: Int, entity: EntityDescription) -> ObjectGraphError {
        ObjectGraphError(
            .validation,
            "Batch insert row \(number) of \(entity.name) has no value for required attribute '\(name)', which has no default; nothing was written",
            entityName: entity.name, key: name)
    }

    /// The constant values of a batch update, by attribute name.
    ///
    /// - Throws: ``ObjectGraphError/validation`` naming the entity and the key.
    static func updateValues(_ dictionary: [String: any Sendable], entity: EntityDescription) throws -> [(name: String, value: Value)] {
        let context = "Batch update of \(entity.name)"
        var result: [(name: String, value: Value)] = []
        for (key, raw) in dictionary.sorted(by: { $0.key < $1.key }) {
            let attribute = try storedAttribute(key, of: entity, context: context)
            let value = try value(raw, for: attribute, entity: entity, context: context)
            if value.isNull && !attribute.isOptional {
                throw ObjectGraphError(
                    .validation, "\(context) sets required attribute '\(key)' to nil; nothing was written", entityName: entity.name, key: key)
            }
            result.append((key, value))
        }
        return result
    }

    private static func storedAttribute(_ key: String, of entity: EntityDescription, context: @autoclosure () -> String) throws
        -> AttributeDescription
    {
        // The entity's scan of its names (cheaper than hashing the key for a small entity).
        if let attribute = entity.property(forKey: key) as? AttributeDescription, !attribute.isTransient { return attribute }
        let context = context()
        guard let property = entity.propertiesByName[key] else {
            throw ObjectGraphError(
                .validation, "\(context): the entity has no attribute '\(key)'; nothing was written", entityName: entity.name, key: key)
        }
        guard let attribute = property as? AttributeDescription, !attribute.isTransient else {
            let kind = property is RelationshipDescription ? "a relationship" : "a transient attribute"
            throw ObjectGraphError(
                .validation, "\(context): '\(key)' is \(kind); batch requests set stored attributes only; nothing was written",
                entityName: entity.name, key: key)
        }
        return attribute
    }

    private static func value(_ raw: Any, for attribute: AttributeDescription, entity: EntityDescription, context: @autoclosure () -> String) throws
        -> Value
    {
        let converted: Value?
        if attribute.attributeType == .transformable {
            if isNil(raw) { return .null }
            converted = (try? TransformableCoding.encode(raw, valueType: attribute.valueType)).map(Value.data)
        } else {
            // Converted first: asking an `Int64` in `Any` whether it is `NSNull` bridges it to an
            // `NSNumber` on Linux, which cost a batch insert more than writing its rows.
            converted = Value.converting(raw, to: attribute.attributeType, valueType: attribute.valueType)
            if converted == nil && isNil(raw) { return .null }
        }
        guard let converted else {
            throw ObjectGraphError(
                .validation,
                "\(context()): \(String(reflecting: raw)) (\(type(of: raw))) is not a value of attribute '\(attribute.name)', of type \(attribute.attributeType); nothing was written",
                entityName: entity.name, key: attribute.name)
        }
        return converted
    }

    /// Whether a value is `nil` boxed in `Any` (an `Optional.none`) or `NSNull`.
    private static func isNil(_ value: Any) -> Bool {
        if let optional = value as? any _OptionalUnwrapping { return optional.unwrapped == nil }
        return value is NSNull
    }
}
