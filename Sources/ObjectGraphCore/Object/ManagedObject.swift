import Foundation

/// An object of the graph: the values of one entity's properties, faulted in from a store,
/// change-tracked by its context (`NSManagedObject`).
///
/// Read and write properties by name, or through typed accessors in a subclass:
///
/// ```swift
/// let note = context.insertNewObject(forEntityName: "Note")
/// note.setValue("Hello", forKey: "title")
/// let title = note.value(forKey: "title") as? String
/// ```
///
/// An object belongs to its context's queue and never leaves it: `ManagedObject` is not `Sendable`.
/// To use an object on another queue, pass its ``objectID`` and resolve it in a context there.
///
/// It is a programmer error to use an object outside its context's queue.
open class ManagedObject: Hashable, CustomStringConvertible {
    /// The object's entity.
    public let entity: EntityDescription
    /// The object's ID: temporary until the object is saved, permanent afterwards.
    @exclusivity(unchecked) public internal(set) var objectID: ManagedObjectID
    /// The context the object is registered in, nil once deleted and saved, or after `reset()`.
    ///
    /// An object keeps its context alive (a context keeps only its changed objects alive, until
    /// they are saved or rolled back), so an object fetched from a short-lived context can still
    /// fire its faults.
    @exclusivity(unchecked) public internal(set) var managedObjectContext: ManagedObjectContext?

    // The state below is used only on the context's queue (checked in debug builds), so the
    // dynamic exclusivity checks Swift adds to class properties are turned off: they cost more than
    // the work of a property access. The object's data (values to batch) is written only in this
    // file: by the accessors, and by the named transitions at its end that contexts call.

    /// Current values by property index (attributes, to-one as `.objectID`); empty while a fault.
    @exclusivity(unchecked) fileprivate(set) var values: [Value] = []
    /// The values as last read from or written to the store (or the parent); nil for a new object.
    @exclusivity(unchecked) fileprivate(set) var snapshot: Snapshot?
    /// Properties changed since the last save.
    @exclusivity(unchecked) fileprivate(set) var changedIndices = PropertyMask()
    /// To-many relationships, by property index, once touched.
    @exclusivity(unchecked) fileprivate(set) var toMany: [Int: RelationshipValue] = [:]
    /// Decoded transformable values and values of the wrong type, by property index.
    @exclusivity(unchecked) fileprivate(set) var boxed: [Int: Any] = [:]
    /// Lifecycle state: the phase and the marks other owners keep; changed only by its transitions.
    @exclusivity(unchecked) var state = ObjectState()
    /// For objects of a batched fetch: the batch to fulfil together.
    @exclusivity(unchecked) fileprivate(set) var batch: FaultBatch?

    /// Creates an object of `entity`, inserted into `context` when one is given.
    ///
    /// Subclasses that declare initializers must keep this one (it is how a context creates
    /// instances of their entity).
    public required init(entity: EntityDescription, insertInto context: ManagedObjectContext?) {
        self.entity = entity
        self.objectID = .temporary(for: entity)
        if let context { context.insert(self) }
    }

    /// Creates an object of the entity whose class is `Self`, inserted into `context`.
    ///
    /// It is a programmer error when the context's model has no entity for the class.
    public convenience init(context: ManagedObjectContext) {
        guard let entity = context.model?.entities.first(where: { $0.managedObjectClass == Self.self }) else {
            fatalError("ObjectGraph: no entity of the model of context '\(context.debugName)' has class \(Self.self)")
        }
        self.init(entity: entity, insertInto: context)
    }

    deinit {
        // Whatever thread drops the last reference: only the row cache (behind its lock) is touched.
        // The context's identity map does not retain the object and forgets it on its own queue.
        guard let context = managedObjectContext else { return }
        // Its identity-map entry is swept on the context's queue; here it is only counted.
        context.identityMapDeaths.add(1, ordering: .relaxed)
        if state.holdsRowCache, let cache = context.persistentStoreCoordinator?.rowCache {
            cache.release(CollectionOfOne(objectID))
        }
    }

    // MARK: - Identity

    public static func == (lhs: ManagedObject, rhs: ManagedObject) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    /// The hash sets of objects use: the object's address through the standard library's one-word hash.
    public func _rawHashValue(seed: Int) -> Int { UInt(bitPattern: ObjectIdentifier(self))._rawHashValue(seed: seed) }

    open var description: String {
        var text = "<\(entity.name) \(objectID)"
        if isFault { return text + " (fault)>" }
        for attribute in entity.attributes.prefix(6) {
            text += " \(attribute.name)=\(String(describing: storedValue(attribute.index).debugText))"
        }
        return text + ">"
    }

    // MARK: - State

    /// Whether the object's values have not been read from the store yet.
    public var isFault: Bool { state.readsAsFault }
    /// Whether the object was inserted and not yet saved.
    public var isInserted: Bool { state.isInserted }
    /// Whether the object was deleted and the delete not yet saved.
    public var isDeleted: Bool { state.isDeleted }
    /// Whether the object has unsaved changes to its values (not inserted, not deleted).
    public var isUpdated: Bool { state.isUpdated }
    /// Whether the object is inserted, updated or deleted.
    public var hasChanges: Bool { state.hasChanges }
    /// Whether the object has changes that would be saved (Core Data's `hasPersistentChangedValues`).
    public var hasPersistentChangedValues: Bool {
        changedIndices.contains { index in !((entity.properties[index] as? AttributeDescription)?.isTransient ?? false) }
    }

    /// The values changed since the last save, by key.
    public func changedValues() -> [String: Any] {
        checkQueue("changedValues()")
        var result: [String: Any] = [:]
        for index in changedIndices {
            let property = entity.properties[index]
            result[property.name] = value(forKey: property.name) ?? NSNull()
        }
        return result
    }

    /// The values of `keys` (all properties when nil) as last saved or fetched.
    public func committedValues(forKeys keys: [String]?) -> [String: Any] {
        checkQueue("committedValues(forKeys:)")
        fireFaultIfNeeded()
        var result: [String: Any] = [:]
        guard let snapshot else { return result }
        for property in keys.map({ $0.compactMap { entity.propertiesByName[$0] } }) ?? entity.properties {
            if let attribute = property as? AttributeDescription {
                let v = snapshot.values[attribute.index]
                result[attribute.name] = decode(v, attribute: attribute) ?? NSNull()
            } else if let relationship = property as? RelationshipDescription, !relationship.isToMany {
                if case .objectID(let id) = snapshot.values[relationship.index], let context = managedObjectContext {
                    result[relationship.name] = context.object(with: id)
                } else {
                    result[relationship.name] = NSNull()
                }
            }
        }
        return result
    }

    // MARK: - Lifecycle hooks (override in subclasses; call super)

    /// Called once when the object is inserted into a context. Set initial values here.
    ///
    /// The initial values of a `@Managed` class's properties are set before it is called, whether
    /// or not an override calls `super`.
    open func awakeFromInsert() {}
    /// Sets the properties of a `@Managed` class whose initial values are evaluated for each new
    /// object (`var id: UUID = UUID()`) to the values the object's initializer evaluated. Called
    /// once, when the object is inserted into a context, before ``awakeFromInsert()``; never for
    /// an object fetched, faulted in, merged, or saved into a parent context by a child.
    ///
    /// `@Managed` generates the overrides; not called or overridden by hand.
    open func _managedApplyInitialValues() {}
    /// Called when the object's values are read from the store.
    open func awakeFromFetch() {}
    /// Called before the object is saved.
    open func willSave() {}
    /// Called after the object is saved.
    open func didSave() {}
    /// Called when the object is about to be deleted (before delete rules are applied).
    open func prepareForDeletion() {}
    /// Called before the object becomes a fault.
    open func willTurnIntoFault() {}
    /// Called after the object became a fault.
    open func didTurnIntoFault() {}

    // MARK: - Validation hooks

    /// Validates one value; the default accepts it. Throw to refuse it: an ``ObjectGraphError``
    /// (`ObjectGraphError(.validation, "…")`; the save fills in the entity, key and object when it
    /// does not name them), or any other error, which the save reports as a validation error of the
    /// property. Every property is checked and every refusal reported.
    open func validateValue(_ value: Any?, forKey key: String) throws {}
    /// Validates the object before it is inserted into the store; the default checks every property.
    open func validateForInsert() throws { try validateProperties() }
    /// Validates the object before an update is saved; the default checks every property.
    open func validateForUpdate() throws { try validateProperties() }
    /// Validates the object before its delete is saved; the default applies the deny rule.
    open func validateForDelete() throws { try validateDenyRules() }

    // MARK: - Key-value access

    /// The value of a property: an attribute's value (`Int16`…`URL`, or the decoded transformable),
    /// a to-one relationship's destination (`ManagedObject`), or a to-many relationship's
    /// destinations (`Set<ManagedObject>`, `[ManagedObject]` when ordered); nil for nil.
    ///
    /// It is a programmer error to name a key the entity does not have.
    open func value(forKey key: String) -> Any? {
        checkQueue("value(forKey: \"\(key)\")")
        return primitiveValue(forKey: key)
    }

    /// Sets a property, tracking the change and keeping inverse relationships in sync.
    ///
    /// Any value exactly convertible to the attribute's type is accepted (an `Int` for an
    /// `integer16` attribute when it fits). A value of the wrong type is kept and fails
    /// validation at save; it does not crash.
    ///
    /// It is a programmer error to name a key the entity does not have.
    open func setValue(_ value: Any?, forKey key: String) {
        checkQueue("setValue(_:forKey: \"\(key)\")")
        let property = property(named: key)
        if let relationship = property as? RelationshipDescription {
            setRelationship(value, relationship)
        } else {
            setAttribute(value, property as! AttributeDescription, tracking: true)
        }
    }

    /// The value of a property without the accessor's hooks (as in Core Data).
    open func primitiveValue(forKey key: String) -> Any? {
        let property = property(named: key)
        fireFaultIfNeeded()
        if let relationship = property as? RelationshipDescription {
            if relationship.isToMany {
                let objects = destinationObjects(relationship)
                return relationship.isOrdered ? objects as Any : Set(objects) as Any
            }
            guard case .objectID(let id) = values[relationship.index] else { return nil }
            return managedObjectContext?.object(with: id)
        }
        return attributeValue(unsafeDowncast(property, to: AttributeDescription.self))
    }

    /// An attribute's value as ``primitiveValue(forKey:)`` gives it (the fault already fired).
    @inline(__always)
    func attributeValue(_ attribute: AttributeDescription) -> Any? {
        if !boxed.isEmpty, let box = boxed[attribute.index] { return box }
        let value = values[attribute.index]
        if attribute.attributeType == .transformable {
            let decoded = decode(value, attribute: attribute)
            if let decoded { boxed[attribute.index] = decoded }
            return decoded
        }
        return value.publicValue(for: attribute.attributeType)
    }

    /// Sets a property without the accessor's hooks; the change is still tracked (as in Core Data, a
    /// primitive change is saved), but inverse relationships are not updated.
    open func setPrimitiveValue(_ value: Any?, forKey key: String) {
        let property = property(named: key)
        if let relationship = property as? RelationshipDescription {
            setRelationship(value, relationship, maintainInverse: false)
        } else {
            setAttribute(value, property as! AttributeDescription, tracking: true)
        }
    }

    /// Hooks for hand-written accessors, as in Core Data; ObjectGraph tracks changes without them.
    open func willAccessValue(forKey key: String?) { checkQueue("willAccessValue(forKey:)"); fireFaultIfNeeded() }
    open func didAccessValue(forKey key: String?) {}
    open func willChangeValue(forKey key: String) { checkQueue("willChangeValue(forKey:)"); fireFaultIfNeeded() }
    open func didChangeValue(forKey key: String) {}

    // MARK: - Internals

    @inline(__always)
    func checkQueue(_ operation: @autoclosure () -> String) {
        if ConcurrencyChecks.enabled, let context = managedObjectContext {
            context.assertOnQueue(operation: operation(), object: self)
        }
    }

    @inline(__always)
    func property(named key: String) -> PropertyDescription {
        guard let property = entity.property(forKey: key) else {
            fatalError("ObjectGraph: entity '\(entity.name)' has no property '\(key)' (object \(objectID))")
        }
        return property
    }

    /// The stored value at an index (no fault firing).
    func storedValue(_ index: Int) -> Value { index < values.count ? values[index] : .null }

    func decode(_ value: Value, attribute: AttributeDescription) -> Any? {
        if attribute.attributeType == .transformable {
            guard case .data(let data) = value else { return value.publicValue(for: .binaryData) }
            return try? TransformableCoding.decode(data, valueType: attribute.valueType)
        }
        return value.publicValue(for: attribute.attributeType)
    }

    /// Fires the fault, or uses an inserted object's faulted values, when the object reads as a
    /// fault; inlined into every accessor, its work outlined (most objects read are not faults).
    @inline(__always)
    func fireFaultIfNeeded() {
        if state.readsAsFault { fireFault() }
    }

    @inline(never)
    private func fireFault() {
        if state.isFault {
            guard let context = managedObjectContext else {
                fatalError("ObjectGraph: object \(objectID) is a fault with no context (its context was reset or deallocated); it cannot be read")
            }
            context.fulfillFault(self)
        } else if state.isFaultedInsert {
            // An inserted object turned into a fault: its values are here already.
            _ = state.useFaultedInsert()
        }
    }

    func setAttribute(_ newValue: Any?, _ attribute: AttributeDescription, tracking: Bool) {
        fireFaultIfNeeded()
        let index = attribute.index
        if attribute.attributeType == .transformable {
            if tracking { registerUndoOfStored(index) }
            boxed[index] = nil
            if let newValue, !(newValue is NSNull) {
                boxed[index] = newValue
                values[index] = .data(Data())  // placeholder; encoded at save
            } else {
                values[index] = .null
            }
        } else if let converted = Value.converting(newValue, to: attribute.attributeType, valueType: nil) {
            store(converted, at: index, tracking: tracking)
            return
        } else {
            // The wrong type: kept as given, refused by validation at save.
            if tracking { registerUndoOfStored(index) }
            boxed[index] = newValue
            values[index] = .null
        }
        if tracking { markChanged(index) }
    }

    /// Sets a stored attribute (not a transformable one) to a value already in its stored form:
    /// what `setAttribute` does once it has converted the value, and what typed accessors call
    /// directly (their values need no conversion from `Any`).
    @inline(__always)
    func store(_ value: Value, at index: Int, tracking: Bool) {
        if !boxed.isEmpty { boxed[index] = nil }
        if tracking, !state.isInserted, values[index] == value, !changedIndices.contains(index) { return }
        if tracking { registerUndoOfStored(index) }
        values[index] = value
        if tracking { markChanged(index) }
    }

    @inline(__always)
    func markChanged(_ index: Int) {
        changedIndices.insert(index)
        guard let context = managedObjectContext else { return }
        if !state.marks.contains(.unreported) { context.noteUnreportedChange(self) }
        if state.change() {
            context.changes.recordUpdate(self)
            context.retained.insert(self)
        }
    }

    // MARK: - Relationships

    func relationshipValue(_ relationship: RelationshipDescription) -> RelationshipValue {
        if let value = toMany[relationship.index] { return value }
        let value = RelationshipValue(isOrdered: relationship.isOrdered, loaded: state.isInserted)
        toMany[relationship.index] = value
        return value
    }

    /// Sets a to-one relationship's stored value (the accessors' write; no change tracking).
    func storeToOne(_ id: ManagedObjectID?, at index: Int) {
        values[index] = id.map(Value.objectID) ?? .null
    }
}

// MARK: - The object's data: its transitions

extension ManagedObject {
    /// A fault's data: none (turning into a fault, a context's reset).
    func dropData() {
        values = []
        snapshot = nil
        boxed = [:]
        toMany = [:]
        changedIndices = []
    }

    /// A row read for the object (a fault fired, a fetch): the row's values, transient attributes
    /// at their defaults (they are not stored), and the row as the snapshot.
    func fill(from row: Snapshot) {
        values = row.values
        if entity.storedAttributes.count != entity.attributes.count {
            for attribute in entity.attributes where attribute.isTransient {
                values[attribute.index] = attribute.defaultStoredValue
            }
        }
        snapshot = row
        boxed = [:]
    }

    /// A new object's values: the model's defaults, transformable ones kept decoded.
    func fillForInsert() {
        values = defaultStoredValues
        for attribute in entity.attributes where attribute.attributeType == .transformable {
            if let defaultValue = attribute.defaultValue { boxed[attribute.index] = defaultValue }
        }
    }

    /// The data of an object whose row is gone: default values, to-many relationships loaded and
    /// empty.
    func fillWithDefaults() {
        values = defaultStoredValues
        loadEmptyToManyRelationships()
    }

    /// A child's inserted object taken by its parent context: the child's values, no snapshot,
    /// to-many relationships loaded and empty (the caller adds the child's destinations).
    func fillAsInserted(values inserted: [Value]) {
        values = inserted
        boxed = [:]
        toMany = [:]
        snapshot = nil
        batch = nil
        loadEmptyToManyRelationships()
    }

    /// The object a batch insert's handler fills starts its next row: `defaults` (the model's
    /// default for every property), nothing set (``BatchInsertRequest/managedObjectHandler``).
    func startBatchRow(_ defaults: [Value]) {
        values = defaults
        if !boxed.isEmpty { boxed = [:] }
        if !toMany.isEmpty { toMany = [:] }
        changedIndices = []
        state.startBatchRow()
    }

    /// What the handler set, taken out of the object, which starts its next row with `defaults`:
    /// the values, the indexes set, and the values kept boxed (transformable ones, and values of the
    /// wrong type, which the row's check refuses).
    func takeBatchRow(restarting defaults: [Value]) -> (values: [Value], set: PropertyMask, boxed: [Int: Any]) {
        let row = (values, changedIndices, boxed)
        startBatchRow(defaults)
        return row
    }

    /// A relationship set on a batch insert's object: only noted, for the row's check to refuse
    /// (a batch insert sets stored attributes only), so that no other object is touched.
    func noteRelationshipSetInBatchRow(_ index: Int) {
        changedIndices.insert(index)
    }

    /// The model's default for each property, in its stored form (nil for relationships).
    private var defaultStoredValues: [Value] {
        entity.properties.map { ($0 as? AttributeDescription)?.defaultStoredValue ?? .null }
    }

    /// Every to-many relationship loaded and empty.
    private func loadEmptyToManyRelationships() {
        for relationship in entity.relationships where relationship.isToMany {
            toMany[relationship.index] = RelationshipValue(isOrdered: relationship.isOrdered, loaded: true)
        }
    }

    /// Puts the object's own transient values into `row`'s values (transient attributes are not
    /// stored: a row read back has none).
    private func keepTransients(in row: inout [Value]) {
        for attribute in entity.attributes where attribute.isTransient && attribute.index < values.count {
            row[attribute.index] = values[attribute.index]
        }
    }

    /// The stored values of `row` with the object's own transient values; decoded values dropped,
    /// nothing changed (a merge of a newer row, a conflict resolved for the store's version).
    func takeStoredValues(of row: Snapshot) {
        var taken = row.values
        keepTransients(in: &taken)
        values = taken
        boxed = [:]
        changedIndices = []
    }

    /// A newer row for an object without changes: its stored values and snapshot; to-many
    /// relationships load again when next used.
    func takeNewer(_ row: Snapshot) {
        takeStoredValues(of: row)
        snapshot = row
        toMany = [:]
    }

    /// The version conflicts are checked against from now on, the values unchanged.
    func rebase(on row: Snapshot) {
        snapshot = row
    }

    /// Forgets the snapshot and the changed properties: the object's row is gone (deleted
    /// elsewhere), or it is to be written again as new.
    func forgetSnapshotAndChanges() {
        snapshot = nil
        changedIndices = []
    }

    /// Unsaved changes discarded: the snapshot's values again (a rollback).
    func revertToSnapshot() {
        changedIndices = []
        guard let snapshot else { return }
        values = snapshot.values
        boxed = [:]
        toMany = [:]
    }

    /// Unsaved changes discarded for the version `row` (a deleted object a rollback policy brings
    /// back): its values and snapshot.
    func revert(to row: Snapshot) {
        values = row.values
        changedIndices = []
        toMany = [:]
        snapshot = row
    }

    /// Every stored property marked changed: the object is written whole at the next save.
    func markEveryStoredPropertyChanged() {
        changedIndices = []
        for property in entity.properties {
            if let attribute = property as? AttributeDescription, attribute.isTransient { continue }
            if let relationship = property as? RelationshipDescription, relationship.isToMany { continue }
            changedIndices.insert(property.index)
        }
    }

    /// Merges a newer version property by property, as `outcome` decides for each stored
    /// property (`changedHere` says whether the object changed it); transient attributes stay the
    /// object's own. The newer version becomes the snapshot.
    func merge(_ newer: Snapshot, outcome: (_ index: Int, _ changedHere: Bool) -> MergePolicy.PolicyType.PropertyOutcome) {
        var merged = values
        for property in entity.properties where property.index < newer.values.count {
            if let attribute = property as? AttributeDescription, attribute.isTransient { continue }
            let index = property.index
            let isToMany = (property as? RelationshipDescription)?.isToMany == true
            switch outcome(index, changedIndices.contains(index)) {
            case .keepMine:
                continue
            case .keepMineAsChanged:
                if !isToMany { changedIndices.insert(index) }
            case .takeTheirs:
                if !isToMany {
                    merged[index] = newer.values[index]
                    boxed[index] = nil
                }
            case .takeTheirsDroppingMine:
                changedIndices.remove(index)
                if isToMany {
                    toMany[index] = nil
                } else {
                    merged[index] = newer.values[index]
                    boxed[index] = nil
                }
            }
        }
        values = merged
        snapshot = newer
    }

    /// A stored value set from elsewhere (a child's save, in its parent): false when the object
    /// had it already. The caller marks the property changed.
    func takeValue(_ value: Value, at index: Int) -> Bool {
        if values[index] == value && boxed[index] == nil { return false }
        values[index] = value
        boxed[index] = nil
        return true
    }

    /// A to-one relationship whose destination is gone: nil in the values and in the snapshot.
    func clearToOne(at index: Int) {
        values[index] = .null
        if var row = snapshot, index < row.values.count {
            row.values[index] = .null
            snapshot = row
        }
    }

    /// Forgets a loaded to-many relationship: it loads again when next used.
    func forgetToMany(at index: Int) {
        toMany[index] = nil
    }

    /// Forgets the loaded to-many relationships without unsaved changes.
    func forgetUnchangedToManyRelationships() {
        for (index, value) in toMany where !value.hasChanges { toMany[index] = nil }
    }

    /// Marks the to-many relationships not loaded yet as held elsewhere (an ancestor's inserted
    /// object seen in a child): they load from the parent when used, rather than start empty.
    func markMissingToManyRelationshipsUnloaded() {
        for relationship in entity.relationships where relationship.isToMany && toMany[relationship.index] == nil {
            toMany[relationship.index] = RelationshipValue(isOrdered: relationship.isOrdered, loaded: false)
        }
    }

    /// Rewrites the object IDs in the values and the snapshot by `mapping` (permanent IDs for
    /// temporary ones).
    func remapObjectIDs(_ mapping: [ManagedObjectID: ManagedObjectID]) {
        func remap(_ values: inout [Value]) -> Bool {
            var changed = false
            for (index, value) in values.enumerated() {
                if case .objectID(let id) = value, let permanent = mapping[id] {
                    values[index] = .objectID(permanent)
                    changed = true
                }
            }
            return changed
        }
        _ = remap(&values)
        if var row = snapshot, remap(&row.values) { snapshot = row }
    }

    /// The object as saved: `row` (the store's version, when it gave one) becomes the snapshot,
    /// with the object's transient values kept; else object IDs are rewritten by `permanentID`.
    /// To-many relationships' IDs are rewritten by `permanentID` and their changes committed;
    /// nothing is changed any more.
    func settleAsSaved(row: Snapshot?, permanentID: (ManagedObjectID) -> ManagedObjectID?) {
        if var row {
            keepTransients(in: &row.values)
            values = row.values
            snapshot = row
        } else {
            values = values.map { if case .objectID(let id) = $0, let permanent = permanentID(id) { .objectID(permanent) } else { $0 } }
        }
        for value in toMany.values {
            value.remap(permanentID)
            value.commit()
        }
        changedIndices = []
    }

    /// The unsaved changes of a non-fault object, kept to be put back after a refresh.
    struct UnsavedChanges {
        fileprivate let changed: PropertyMask
        fileprivate let values: [Value]
        fileprivate let boxed: [Int: Any]
        fileprivate let toMany: [Int: RelationshipValue]
    }

    var unsavedChanges: UnsavedChanges {
        UnsavedChanges(changed: changedIndices, values: values, boxed: boxed, toMany: toMany)
    }

    /// Puts unsaved changes back over freshly read values (a refresh that keeps changes).
    func restore(_ changes: UnsavedChanges) {
        for index in changes.changed {
            values[index] = changes.values[index]
            if let box = changes.boxed[index] { boxed[index] = box }
            if let value = changes.toMany[index] { toMany[index] = value }
        }
        changedIndices = changes.changed
    }

    /// A stored property put back as it was, value and decoded value (an undo).
    func putBack(_ value: Value, _ box: Any?, at index: Int) {
        values[index] = value
        boxed[index] = box
    }

    /// A decoded value kept beside its stored form.
    func cacheDecoded(_ value: Any, at index: Int) {
        boxed[index] = value
    }

    /// Joins the batch of a batched fetch: its faults are filled together.
    func join(_ batch: FaultBatch) {
        self.batch = batch
    }

    /// Leaves its batch (the batch is being filled).
    func leaveBatch() {
        batch = nil
    }
}

@available(*, unavailable, message: "A ManagedObject belongs to its context's queue; pass its objectID to another queue instead")
extension ManagedObject: @unchecked Sendable {}
