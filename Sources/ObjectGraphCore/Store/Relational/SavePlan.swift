import Foundation

/// A save as the relational stores run it: a value built from the save request and the store's
/// layout, whose steps are data, run in order through a ``RelationalSession`` by ``run(on:store:)``.
///
/// The steps, in order:
/// 1. keys for inserted objects that have none (root entities in one order, so two saves never
///    wait on each other's key rows in opposite orders);
/// 2. the versions of the rows saved over, checked against those the saving context saw (locked
///    until the commit where the dialect locks: ``SQLDialect/versionLock``);
/// 3. deletes, with their join-table rows;
/// 4. unique values updated objects give up, cleared (a unique index checks each statement, so two
///    objects that exchange values would otherwise collide halfway through the save);
/// 5. inserts, then 6. updates of the changed columns, each bumping the row's version;
/// 7. join-table rows (and the hidden foreign keys of to-many relationships without an inverse),
///    removed then added; 8. the positions of ordered relationships;
/// 9. uniqueness constraints, checked once everything is written.
///
/// What the stores add after the steps is their own record of the save: SQLite's persistent
/// history, PostgreSQL's change log.
struct SavePlan {
    /// A step. The rows of deletes, inserts and updates are the request's lists, written in
    /// order: a plan costs the same for one object as for a million.
    enum Step {
        case allocateKeys(root: EntityDescription, ids: [ManagedObjectID])
        case checkVersions(table: TableLayout, rows: [(key: Int64, object: SavedObject)])
        case deleteRows
        case releaseUniqueValues(SavedObject, key: Int64, columns: [String])
        case insertRows
        case updateRows
        case removePairs
        case addPairs
        case writeOrders
        case checkUniqueness
    }

    /// The request, its inserted objects in the order they were created (so that rows are
    /// appended to their table's B-tree).
    let request: StoreSaveRequest
    let steps: [Step]
    let schema: CoreDataLayout
    /// The layout of each root entity's table, by root entity code.
    let tables: [Int: TableLayout]
    /// Whether each updated row's version is checked by its `UPDATE` (no `checkVersions` step).
    let versionInUpdate: Bool

    /// - Parameter checksUniqueness: whether the save checks its uniqueness constraints once its
    ///   rows are written; a store whose unique indexes enforce every constraint (PostgreSQL's,
    ///   with every index in place) does not need to: an INSERT or UPDATE the index refuses is
    ///   reported as the check would report it.
    /// - Parameter checksVersionInUpdate: whether a save whose only written row is one update (no
    ///   delete, nothing else updated) checks that row's version in its `UPDATE` (`… AND "Z_OPT" =
    ///   $n RETURNING "Z_OPT"`: no row back is the conflict) rather than reading it first; for
    ///   dialects whose updates read back the new version (``SQLDialect/returnsUpdatedVersion``).
    ///   One row needs no lock order, and the `UPDATE` locks it as the read would have.
    ///   - checksEveryVersionInUpdate: whether every updated row's version is checked by its own
    ///     `UPDATE`, whatever their number (when none is deleted), and the rows are updated by root
    ///     entity in entity-code order, then in key order: the order `checkVersions` locks them in,
    ///     which the `UPDATE`s then take. For a save sent as one statement, which cannot read first.
    init(
        _ request: StoreSaveRequest, schema: CoreDataLayout, tables: [Int: TableLayout], checksUniqueness: Bool = true,
        checksVersionInUpdate: Bool = false, checksEveryVersionInUpdate: Bool = false
    ) {
        var request = request
        request.inserted.sort { $0.id < $1.id }
        let checkable = request.deleted.isEmpty && !request.updated.isEmpty
            && request.updated.allSatisfy { $0.expectedVersion != nil && $0.id.primaryKey != nil }
        versionInUpdate = checkable && (checksEveryVersionInUpdate || (checksVersionInUpdate && request.updated.count == 1))
        if versionInUpdate && request.updated.count > 1 {
            request.updated.sort {
                ($0.entity.rootEntity.entityCode, $0.id.primaryKey ?? 0) < ($1.entity.rootEntity.entityCode, $1.id.primaryKey ?? 0)
            }
        }
        self.request = request
        self.schema = schema
        self.tables = tables
        var steps: [Step] = []
        Self.planKeysAndVersions(request, schema: schema, tables: tables, versionInUpdate: versionInUpdate, into: &steps)
        if !request.deleted.isEmpty { steps.append(.deleteRows) }
        for (object, attributes) in StoreUniqueness.valuesToRelease(in: request) {
            guard let key = object.id.primaryKey else { continue }
            steps.append(.releaseUniqueValues(object, key: key, columns: Set(attributes.map { schema.columnName(for: $0) }).sorted()))
        }
        if !request.inserted.isEmpty { steps.append(.insertRows) }
        if !request.updated.isEmpty { steps.append(.updateRows) }
        if !request.joinDeletes.isEmpty { steps.append(.removePairs) }
        if !request.joinInserts.isEmpty { steps.append(.addPairs) }
        if !request.orderings.isEmpty { steps.append(.writeOrders) }
        if checksUniqueness { steps.append(.checkUniqueness) }
        self.steps = steps
    }

    /// Steps 1 and 2: keys, then version checks, each by root entity in entity-code order.
    private static func planKeysAndVersions(
        _ request: StoreSaveRequest, schema: CoreDataLayout, tables: [Int: TableLayout], versionInUpdate: Bool, into steps: inout [Step]
    ) {
        var pending: [Int: [ManagedObjectID]] = [:]
        for object in request.inserted where object.id.isTemporaryID {
            pending[object.entity.rootEntity.entityCode, default: []].append(object.id)
        }
        for rootCode in pending.keys.sorted() {
            steps.append(.allocateKeys(root: schema.model.entitiesByCode[rootCode], ids: pending[rootCode]!))
        }
        var checks: [Int: [(key: Int64, object: SavedObject)]] = [:]
        for object in request.updated + request.deleted where !versionInUpdate {
            guard let key = object.id.primaryKey else { continue }
            checks[object.entity.rootEntity.entityCode, default: []].append((key, object))
        }
        for rootCode in checks.keys.sorted() {
            guard let table = tables[rootCode] else { continue }
            steps.append(.checkVersions(table: table, rows: checks[rootCode]!))
        }
    }

    /// Runs the steps; returns the permanent IDs given and the new snapshot of every inserted and
    /// updated object.
    ///
    /// - Throws: `VersionConflictError` when a row saved over changed since the context read it
    ///   (nothing is written), `ConstraintConflictError` for uniqueness conflicts, the database's errors.
    func run(on session: some RelationalSession, store: PersistentStore) throws -> StoreSaveResult {
        var execution = Execution(plan: self, session: session, store: store)
        for step in steps { try execution.perform(step) }
        return execution.result
    }
}
