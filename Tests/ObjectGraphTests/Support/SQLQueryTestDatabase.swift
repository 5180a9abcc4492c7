import Foundation
import GRDB
@testable import ObjectGraphCore

/// An in-memory SQLite database with a model's schema and ``SQLiteFunctions`` registered, so
/// tests can run generated SQL without importing GRDB.
struct SQLQueryTestDatabase: Sendable {
    let schema: CoreDataLayout
    private let queue: DatabaseQueue

    init(model: ManagedObjectModel) throws {
        schema = CoreDataLayout(model: model)
        var configuration = Configuration()
        configuration.prepareDatabase { db in SQLiteFunctions.register(in: db) }
        queue = try DatabaseQueue(configuration: configuration)
        let statements = schema.createStatements()
        try queue.write { db in
            for statement in statements { try db.execute(sql: statement) }
        }
    }

    /// Runs a statement.
    func execute(_ sql: String, _ arguments: [Value] = []) throws {
        try queue.write { db in
            try db.makeStatement(sql: sql, arguments: arguments).execute()
        }
    }

    /// The first column of every row of a query, as integers.
    func integers(_ sql: String, _ arguments: [Value] = []) throws -> [Int64] {
        try queue.read { db in
            try Int64.fetchAll(db.makeStatement(sql: sql, arguments: arguments))
        }
    }

    /// The first column of the first row of a query: nil, an integer, a real, a string or data.
    func scalar(_ sql: String, _ arguments: [Value] = []) throws -> Value {
        try queue.read { db in
            switch try DatabaseValue.fetchOne(db.makeStatement(sql: sql, arguments: arguments))?.storage {
            case .int64(let v)?: .int(v)
            case .double(let v)?: .double(v)
            case .string(let v)?: .string(v)
            case .blob(let v)?: .data(v)
            case .null?, nil: .null
            }
        }
    }

    /// The `detail` column of `EXPLAIN QUERY PLAN` for a query.
    func queryPlan(_ sql: String, _ arguments: [Value] = []) throws -> [String] {
        try queue.read { db in
            try Row.fetchAll(db.makeStatement(sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments))
                .map { $0["detail"] as String? ?? "" }
        }
    }

    /// The primary keys a fetch of `entityName` returns, in order.
    func fetchPrimaryKeys(
        _ entityName: String, predicate: FetchPredicate?, sortDescriptors: [FetchSortDescriptor] = [],
        includesSubentities: Bool = true
    ) throws -> [Int64] {
        guard let entity = schema.model.entitiesByName[entityName] else {
            throw ObjectGraphError(.invalidFetchRequest, "No entity '\(entityName)'", entityName: entityName)
        }
        let statement = try SQLQueryBuilder.selectStatement(
            schema: schema, entity: entity, includesSubentities: includesSubentities, predicate: predicate,
            sortDescriptors: sortDescriptors, columns: "t0.\(CoreDataLayout.primaryKeyColumn)")
        let keys = try integers(statement.sql, statement.arguments)
        return sortDescriptors.isEmpty ? keys.sorted() : keys
    }
}
