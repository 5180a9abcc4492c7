import Foundation

// How each step of a batch plan becomes statements, in the session's dialect.

extension BatchPlan {
    /// Runs the steps in the transaction `session` is in; what the request did. A step that lists
    /// no row ends the plan: there is nothing to update or delete.
    ///
    /// - Throws: ``ObjectGraphError/constraintConflict`` when an update gives several rows a
    ///   constraint's values, ``ObjectGraphError/validation`` when a deny rule refuses a delete,
    ///   the database's errors.
    func run(on session: some RelationalSession, matcher: some BatchMatching, store: PersistentStore) throws -> StoreBatchResult {
        var execution = Execution(plan: self, session: session, matcher: matcher, store: store)
        for step in steps {
            try execution.perform(step)
            if execution.listedNothing { break }
        }
        return execution.result
    }

    struct Execution<Session: RelationalSession, Matcher: BatchMatching> {
        let plan: BatchPlan
        let session: Session
        let matcher: Matcher
        let store: PersistentStore
        var result = StoreBatchResult()
        /// The rows the request named or matched.
        private var listed: [ManagedObjectID] = []
        /// The rows deleted, with those the delete rules reached.
        private var deleted: [ManagedObjectID] = []
        private(set) var listedNothing = false
        private let dialect: SQLDialect
        private let schema: CoreDataLayout

        init(plan: BatchPlan, session: Session, matcher: Matcher, store: PersistentStore) {
            self.plan = plan
            self.session = session
            self.matcher = matcher
            self.store = store
            dialect = session.dialect
            schema = plan.schema
        }

        private func k(_ column: String) -> String { dialect.keyColumnName(column) }

        mutating func perform(_ step: Step) throws {
            switch step {
            case .listMatches(let fetch): list(try matcher.matchingIDs(fetch))
            case .listExisting(let ids): list(try matcher.existingIDs(ids))
            case .updateMatching(let fetch, let assignments, let condition):
                count(try update(fetch, assignments, condition), updated: true)
            case .checkUniqueness(let constraints): try checkUniqueness(constraints)
            case .deleteMatching(let fetch, let condition):
                deleted = listed
                session.count(1)
                count(try matcher.delete(fetch, where: condition), updated: false)
            case .closeUnderDeleteRules:
                let matcher = matcher
                deleted = try BatchDeleteClosure.closure(of: listed) { relationship, sources in
                    try matcher.destinations(of: relationship, for: sources)
                }
                result.deleted = deleted
                listedNothing = deleted.isEmpty
            case .deleteRows:
                for (rootCode, keys) in TableLayout.keysByRoot(deleted) {
                    guard let table = plan.tables[rootCode] else { continue }
                    try executeInChunks(keys) { "DELETE FROM \(table.table) WHERE \(k("Z_PK")) IN (\($0))" }
                }
            case .clearReferences(let references):
                let keysByRoot = TableLayout.keysByRoot(deleted)
                for reference in references { try clear(reference, keysByRoot: keysByRoot) }
            }
        }

        private mutating func list(_ ids: [ManagedObjectID]) {
            listed = ids
            result.affected = ids
            listedNothing = ids.isEmpty
        }

        /// What an update or a delete of the matching rows changed: the listed rows, or, when the
        /// plan lists none, how many rows of the request's entity.
        private mutating func count(_ changed: Int, updated: Bool) {
            if plan.listsRows {
                if updated { result.updated = listed } else { result.deleted = listed }
            } else {
                result.unlistedCount = changed
                result.unlistedEntities = changed > 0 ? plan.entity.map { [$0] } ?? [] : []
            }
        }

        // MARK: Update

        private func update(_ fetch: StoreFetchRequest, _ assignments: [(AttributeDescription, Value)], _ condition: BatchCondition?) throws -> Int {
            var values: [Value] = []
            var set: [String] = []
            for (attribute, value) in assignments {
                values.append(try session.columnValue(value, for: attribute))
                set.append("\(CoreDataLayout.quote(schema.columnName(for: attribute))) = \(dialect.placeholder(values.count))\(dialect.parameterCast(attribute))")
            }
            set.append("\(k("Z_OPT")) = \(k("Z_OPT")) + 1")
            session.count(1)
            return try matcher.update(fetch, assignments: set.joined(separator: ", "), values: values, where: condition) { message in
                // A unique index refused the update, which the database undid: the refusal the
                // check gives, for the constraint whose columns the message names.
                let touched = BatchPlan.uniquenessConstraints(touchedBy: fetch.entity, names: Set(assignments.map { $0.0.name }))
                guard let refused = touched.first(where: { constraint in
                    constraint.attributes.allSatisfy { message.contains("." + schema.columnName(for: $0)) }
                }) ?? touched.first else { return }
                throw BatchPlan.uniquenessError(updating: fetch.entity, refused)
            }
        }

        /// Refuses an update that gave two rows the same values for a uniqueness constraint.
        private func checkUniqueness(_ constraints: [UniquenessConstraint]) throws {
            guard let entity = plan.entity else { return }
            for constraint in constraints {
                guard let table = plan.tables[constraint.owner.rootEntity.entityCode] else { continue }
                let codes = constraint.owner.selfAndDescendants.map { String(schema.entityNumber(for: $0)) }.joined(separator: ",")
                let columns = constraint.attributes.map { CoreDataLayout.quote(schema.columnName(for: $0)) }
                let present = columns.map { "\($0) IS NOT NULL" }.joined(separator: " AND ")
                session.count(1)
                let sql = """
                    SELECT 1, 1 FROM \(table.table) WHERE \(k("Z_ENT")) IN (\(codes)) AND \(present) \
                    GROUP BY \(columns.joined(separator: ", ")) HAVING COUNT(*) > 1 LIMIT 1
                    """
                if try !session.integerPairs(sql, [], entity: nil).isEmpty {
                    throw BatchPlan.uniquenessError(updating: entity, constraint)
                }
            }
        }

        // MARK: Delete

        /// Clears what `reference` names of the deleted rows; surviving rows whose to-one is
        /// cleared join `result.updated`.
        private mutating func clear(_ reference: Reference, keysByRoot: [Int: [Int64]]) throws {
            switch reference {
            case .hiddenForeignKey(let table, let column, let sourceRoot):
                guard let keys = keysByRoot[sourceRoot] else { return }
                let column = CoreDataLayout.quote(column)
                try executeInChunks(keys) { "UPDATE \(session.table(table)) SET \(column) = NULL WHERE \(column) IN (\($0))" }
            case .joinRows(let table, let column, let root):
                guard let keys = keysByRoot[root] else { return }
                try executeInChunks(keys) { "DELETE FROM \(session.table(table)) WHERE \(CoreDataLayout.quote(column)) IN (\($0))" }
            case .toOne(let entity, let column, let entityColumn, let destinationRoot):
                guard let keys = keysByRoot[destinationRoot] else { return }
                let table = session.table(schema.tableName(for: entity))
                let column = CoreDataLayout.quote(column)
                var assignments = "\(column) = NULL"
                if let entityColumn { assignments += ", \(CoreDataLayout.quote(entityColumn)) = NULL" }
                var cleared: [ManagedObjectID] = []
                try forEachChunk(keys) { chunk in
                    let sql = """
                        UPDATE \(table) SET \(assignments), \(k("Z_OPT")) = \(k("Z_OPT")) + 1 \
                        WHERE \(column) IN (\(dialect.placeholders(chunk.count))) RETURNING \(k("Z_PK")), \(k("Z_ENT"))
                        """
                    for (key, code) in try session.integerPairs(sql, chunk.map(SQLArgument.key), entity: nil) {
                        guard let entity = code.flatMap({ schema.entity(forNumber: Int($0)) }) else { continue }
                        cleared.append(ManagedObjectID(entity: entity, store: store, primaryKey: key))
                    }
                }
                result.updated += cleared
            }
        }

        /// Runs the statement `sql` makes of a chunk's placeholders on every chunk of keys.
        private func executeInChunks(_ keys: [Int64], _ sql: (String) -> String) throws {
            try forEachChunk(keys) { chunk in try session.execute(sql(dialect.placeholders(chunk.count)), chunk.map(SQLArgument.key)) }
        }

        /// Runs `body` on chunks of at most ``TableLayout/keysPerStatement`` keys, each one statement.
        private func forEachChunk(_ keys: [Int64], _ body: (ArraySlice<Int64>) throws -> Void) throws {
            for chunk in TableLayout.statementChunks(keys) {
                session.count(1)
                try body(chunk)
            }
        }
    }
}
