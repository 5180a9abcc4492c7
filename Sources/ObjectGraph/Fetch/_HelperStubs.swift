// TEMPORARY: replaced by the predicate subsystem (helper branch `predicate`).
import Foundation
import GRDB
public final class FetchPredicate: Sendable, CustomStringConvertible {
    public init(format: String, _ arguments: Any...) {}
    public var description: String { "" }
    public func validate() throws {}
    func evaluate(with subject: any PredicateSubject) throws -> Bool { true }
}
public struct FetchSortDescriptor: Sendable, Hashable {
    public let key: String
    public let ascending: Bool
    public init(key: String, ascending: Bool = true) { self.key = key; self.ascending = ascending }
    static func sorted<S: PredicateSubject>(_ subjects: [S], by descriptors: [FetchSortDescriptor]) throws -> [S] { subjects }
}
struct SQLQueryBuilder {
    let rootAlias = "t0"
    var arguments: [Value] = []
    init(schema: SQLiteSchema, entity: EntityDescription) {}
    mutating func whereClause(for predicate: FetchPredicate) throws -> String { "1" }
    mutating func orderByClause(for descriptors: [FetchSortDescriptor]) throws -> String { "" }
    func joinClause() -> String { "" }
}
enum SQLiteFunctions { static func register(in db: Database) {} }
