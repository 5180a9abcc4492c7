import Foundation

/// What a ``BatchInsertResult`` holds (`NSBatchInsertRequestResultType`, with its raw values).
public enum BatchInsertRequestResultType: UInt, Sendable, Hashable {
    /// `true` when the request ran.
    case statusOnly = 0
    /// The IDs of the objects inserted or, through a uniqueness constraint, updated.
    case objectIDs = 1
    /// How many objects were inserted or updated.
    case count = 2
}

/// Inserts rows straight into the stores, without objects (`NSBatchInsertRequest`).
///
/// ```swift
/// let insert = BatchInsertRequest(entityName: "Note", objects: [
///     ["title": "First", "rank": Int64(1)],
///     ["title": "Second"],                       // rank takes the model's default
/// ])
/// insert.resultType = .objectIDs
/// let ids = (try context.execute(insert) as! BatchInsertResult).result as! [ManagedObjectID]
/// ```
///
/// Or row by row, from a handler that fills each dictionary and returns `true` to stop (the row of
/// that call is not inserted):
///
/// ```swift
/// var next = 0
/// let insert = BatchInsertRequest(entityName: "Note") { (row: inout [String: any Sendable]) -> Bool in
///     guard next < titles.count else { return true }
///     row["title"] = titles[next]; next += 1
///     return false
/// }
/// ```
///
/// Or, with a `@Managed` class, through its properties: the handler fills an object of the class and
/// returns `true` to stop (that call's object is not inserted), with no dictionary to build or read:
///
/// ```swift
/// var next = 0
/// let insert = BatchInsertRequest(Note.self) { note in
///     guard next < titles.count else { return true }
///     note.title = titles[next]; next += 1
///     return false
/// }
/// ```
///
/// Every row is checked before anything is written: a key that is not a stored attribute, a value
/// of the wrong type, or a required attribute left without a value (and without a default) refuses
/// the whole request with ``ObjectGraphError/validation`` naming the row, the entity and the key.
/// Keys a row does not name take the model's defaults. On an entity with uniqueness constraints
/// the insert is an upsert: a row whose constrained values an existing row (or an earlier row of the
/// request) has updates that row, writing only the keys it names, and gives it a new version.
/// Relationships cannot be set, as in Core Data. See <doc:BatchOperations>.
public final class BatchInsertRequest: PersistentStoreRequest {
    /// The name of the entity whose rows are inserted.
    public let entityName: String
    /// The entity whose rows are inserted, when the request was made with one.
    public let entity: EntityDescription?
    /// The rows to insert, by attribute name; nil when a handler (``managedObjectHandler``,
    /// ``dictionaryHandler``) supplies them.
    public var objectsToInsert: [[String: any Sendable]]?
    /// Fills one row per call and returns `true` to stop (that call's row is not inserted). It runs
    /// inside ``ManagedObjectContext/execute(_:)``, on the context's queue.
    public var dictionaryHandler: ((inout [String: any Sendable]) -> Bool)?
    /// Fills one object per call and returns `true` to stop (that call's object is not inserted),
    /// as Core Data's `managedObjectHandler`. It runs inside ``ManagedObjectContext/execute(_:)``, on
    /// the context's queue.
    ///
    /// The object is of the entity's class and belongs to no context. Every call gets the same
    /// object, its values reset to the model's defaults, so a row costs no object: set its
    /// attributes, and keep nothing of it after the call. The properties the handler sets are the
    /// row's keys (an upsert writes only those); relationships cannot be set (a set is refused with
    /// the row's number), lifecycle methods such as `awakeFromInsert()` are not called, and a
    /// `@Managed` property whose initial value is evaluated for each object (`var id = UUID()`)
    /// starts at the model's default, not a new value: set it in the handler.
    ///
    /// When a handler is set, it supplies the rows, whatever ``objectsToInsert`` holds;
    /// `managedObjectHandler` comes before ``dictionaryHandler``.
    public var managedObjectHandler: ((ManagedObject) -> Bool)?
    /// The class a typed request was made with, whose entity it inserts rows of.
    private let objectType: ManagedObject.Type?
    /// What the result holds; ``BatchInsertRequestResultType/statusOnly`` by default.
    public var resultType: BatchInsertRequestResultType = .statusOnly
    /// Whether every context on the coordinator with ``ManagedObjectContext/automaticallyMergesChangesFromParent``
    /// merges the inserted and updated objects once the request is written (false by default, as in
    /// Core Data, where batch requests reach no context by themselves).
    public var mergesChangesIntoContexts = false

    /// A request to insert `objects` as rows of the named entity.
    public init(entityName: String, objects: [[String: any Sendable]]) {
        self.entityName = entityName
        self.entity = nil
        self.objectsToInsert = objects
        self.objectType = nil
    }

    /// A request to insert `objects` as rows of `entity`.
    public init(entity: EntityDescription, objects: [[String: any Sendable]]) {
        self.entityName = entity.name
        self.entity = entity
        self.objectsToInsert = objects
        self.objectType = nil
    }

    /// A request to insert the rows `dictionaryHandler` fills, until it returns `true`.
    public init(entityName: String, dictionaryHandler: @escaping (inout [String: any Sendable]) -> Bool) {
        self.entityName = entityName
        self.entity = nil
        self.dictionaryHandler = dictionaryHandler
        self.objectType = nil
    }

    /// A request to insert rows of `entity` that `dictionaryHandler` fills, until it returns `true`.
    public init(entity: EntityDescription, dictionaryHandler: @escaping (inout [String: any Sendable]) -> Bool) {
        self.entityName = entity.name
        self.entity = entity
        self.dictionaryHandler = dictionaryHandler
        self.objectType = nil
    }

    /// A request to insert rows of the entity whose class is `Object`, each from an object of the
    /// class that `managedObjectHandler` fills, until it returns `true` (see
    /// ``managedObjectHandler``).
    ///
    /// The entity is the one the model of the executing context gives `Object`; executing the
    /// request throws ``ObjectGraphError/invalidFetchRequest`` when there is none.
    public init<Object: ManagedObject>(_ type: Object.Type, managedObjectHandler: @escaping (Object) -> Bool) {
        self.entityName = ManagedObjectModel.entityName(of: type)
        self.entity = nil
        self.objectType = type
        // The object is of the entity's class, which is `Object` (checked once in `execute`).
        self.managedObjectHandler = { managedObjectHandler(unsafeDowncast($0, to: Object.self)) }
    }

    /// ``PersistentStoreRequestType/batchInsertRequestType``.
    public override var requestType: PersistentStoreRequestType { .batchInsertRequestType }

    override func execute(in context: ManagedObjectContext) throws -> PersistentStoreResult {
        let coordinator = context.coordinator
        let entity = try coordinator.batchEntity(named: try objectType.map(context.entityName(for:)) ?? entityName, entity)
        if entity.isAbstract {
            throw ObjectGraphError(.validation, "Batch insert of \(entity.name): the entity is abstract; nothing was written", entityName: entity.name)
        }
        let check = BatchValues.InsertRows(entity: entity)
        var rows: [BatchRow] = []
        if let handler = managedObjectHandler {
            if let objectType, entity.managedObjectClass != objectType {
                throw ObjectGraphError(
                    .invalidFetchRequest, "Batch insert of \(entity.name): the entity's class is \(entity.managedObjectClass), not \(objectType); nothing was written",
                    entityName: entity.name)
            }
            let object = entity.managedObjectClass.init(entity: entity, insertInto: nil)
            object.startBatchRow(check.defaults)
            while !handler(object) {
                rows.append(try BatchValues.insertRow(from: object, number: rows.count, check))
            }
        } else if let handler = dictionaryHandler {
            while true {
                var row: [String: any Sendable] = [:]
                if handler(&row) { break }
                rows.append(try BatchValues.insertRow(row, number: rows.count, check))
            }
        } else if let objects = objectsToInsert {
            rows = try BatchValues.insertRows(objects, check)
        }
        // The rows go to one store, as a save's inserts do: the first that can hold the entity.
        let stores = try coordinator.batchStores(for: entity, affectedStores: affectedStores)
        let store = stores.first { !$0.isReadOnly } ?? stores[0]
        let done = try coordinator.executeBatch({ _ in .insert(entity: entity, rows: rows) }, on: [store], merging: mergesChangesIntoContexts, by: context)
        // Several rows can go to one object (an upsert, or rows sharing a constraint's values): each
        // object once. When there are as many objects as rows, they are distinct already.
        guard done.affected.count != done.inserted.count + done.updated.count else { return BatchInsertResult(resultType: resultType, result: done.affected) }
        var seen: Set<ManagedObjectID> = []
        let ids = done.affected.filter { seen.insert($0).inserted }
        return BatchInsertResult(resultType: resultType, result: ids)
    }
}

/// What a ``BatchInsertRequest`` did (`NSBatchInsertResult`).
public final class BatchInsertResult: PersistentStoreResult {
    /// What ``result`` holds.
    public let resultType: BatchInsertRequestResultType
    /// `true` (``BatchInsertRequestResultType/statusOnly``), the number of objects inserted or
    /// updated as an `Int` (``BatchInsertRequestResultType/count``), or their IDs as
    /// `[ManagedObjectID]`, one per object, in the order of the rows
    /// (``BatchInsertRequestResultType/objectIDs``).
    public let result: Any?

    init(resultType: BatchInsertRequestResultType, result ids: [ManagedObjectID]) {
        self.resultType = resultType
        switch resultType {
        case .statusOnly: self.result = true
        case .count: self.result = ids.count
        case .objectIDs: self.result = ids
        }
    }
}
