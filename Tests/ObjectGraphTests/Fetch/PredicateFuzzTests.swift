import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Random predicate formats over ``PredicateTestGraph``'s notes, built from every operator of the
/// language, with the depth (``PredicateNode/depth``) and parser nesting each one has, so a test
/// knows whether it must parse.
struct PredicateFormatGenerator {
    var random: SplitMix64
    private(set) var arguments: [Any] = []

    init(seed: UInt64) { random = SplitMix64(seed: seed) }

    /// A format's text, its depth, and how many parentheses, NOTs, signs, lists and calls nest in it.
    struct Piece {
        var text: String
        var depth: Int
        var nesting: Int
        /// An `AND` or `OR` chain, which needs parentheses inside another.
        var isChain = false
    }

    /// Whether to build deep trees (rarely stopping before the depth budget is spent).
    var deep = false

    mutating func int(_ n: Int) -> Int { Int(random.next() % UInt64(max(n, 1))) }
    mutating func chance(_ percent: Int) -> Bool { int(100) < percent }
    mutating func pick<T>(_ items: [T]) -> T { items[int(items.count)] }

    mutating func resetArguments() { arguments = [] }

    /// A predicate at most `budget` deep (variables: the SUBQUERY variables in scope, over tags).
    mutating func predicate(_ budget: Int, _ variables: [String] = []) -> Piece {
        if budget <= 2 || chance(deep ? 2 : 30) { return comparison(budget, variables) }
        switch int(12) {
        case 0...4:
            let count = chance(1) ? 20 + int(200) : 2 + int(3)
            var children: [Piece] = []
            let spine = int(count)
            for i in 0..<count {
                let full = i == spine || (count <= 10 && !deep && chance(30))
                children.append(full ? predicate(budget - 1, variables) : comparison(min(budget - 1, 3), variables))
            }
            let separator = pick([" AND ", " OR ", " && ", " || ", " and ", " or "])
            let inner = children.map { $0.isChain || chance(10) ? parenthesized($0) : $0 }
            return Piece(
                text: inner.map(\.text).joined(separator: separator), depth: 1 + (children.map(\.depth).max() ?? 0),
                nesting: inner.map(\.nesting).max() ?? 0, isChain: true)
        case 5...7:
            let operand = predicate(budget - 1, variables)
            let wrapped = operand.isChain || chance(30) ? parenthesized(operand) : operand
            return Piece(text: pick(["NOT ", "!", "not "]) + wrapped.text, depth: operand.depth + 1, nesting: wrapped.nesting + 1)
        case 8:
            return parenthesized(predicate(budget, variables))
        default:
            return comparison(budget, variables)
        }
    }

    private func parenthesized(_ piece: Piece) -> Piece {
        Piece(text: "(" + piece.text + ")", depth: piece.depth, nesting: piece.nesting + 1)
    }

    private mutating func comparison(_ budget: Int, _ variables: [String]) -> Piece {
        let expressionBudget = budget - 1
        switch int(20) {
        case 0...5:
            let lhs = numeric(expressionBudget, variables)
            if chance(15) { return compare(lhs, "BETWEEN", "", numericList(2)) }
            if chance(15) { return compare(lhs, "IN", "", numericList(int(6))) }
            let op = pick(["==", "=", "!=", "<>", "<", "<=", "=<", ">", ">=", "=>"])
            return compare(lhs, op, "", numeric(expressionBudget, variables))
        case 6...9:
            return stringComparison(pick(["title", "body", "folder.name"] + variables.map { "$\($0).name" }), modifier: "")
        case 10, 11:
            return stringComparison("tags.name", modifier: pick(["ANY ", "SOME ", "ALL ", "NONE "]))
        case 12:
            let op = pick(["==", "!=", "<", ">=", "BETWEEN"])
            return compare(leaf("folder.notes.rank"), op, "", op == "BETWEEN" ? numericList(2) : leaf(String(int(12) - 2)), modifier: pick(["ANY ", "ALL ", "NONE "]))
        case 13:
            let tag = quoted(pick(["red", "green", "blue", "RED", "nothing"]))
            return chance(50)
                ? compare(leaf(tag), "IN", "", leaf("tags.name"))
                : compare(leaf("tags.name"), "CONTAINS", pick(["", "[c]"]), leaf(tag))
        case 14, 15:
            if budget - 1 >= PredicateLimits.subqueryDepth + 1 && variables.count < 3 {
                let name = "t\(variables.count)"
                let inner = predicate(budget - 1 - PredicateLimits.subqueryDepth, variables + [name])
                let count = Piece(
                    text: "SUBQUERY(tags, $\(name), \(inner.text)).@count", depth: PredicateLimits.subqueryDepth + inner.depth,
                    nesting: inner.nesting + 4)
                return compare(count, pick(["==", "!=", ">", "<", ">="]), "", leaf(String(int(4))))
            }
            return compare(leaf(pick(["tags.@count", "folder.notes.@count"])), pick(["==", ">", "<="]), "", leaf(String(int(5))))
        case 16:
            return Piece(text: pick(["TRUEPREDICATE", "FALSEPREDICATE", "truepredicate"]), depth: 1, nesting: 0)
        case 17:
            let (key, value): (String, Any?) = pick([
                ("uuid", PredicateTestGraph.uuid1), ("uuid", PredicateTestGraph.uuid2), ("link", URL(string: "https://b.example")!),
                ("blob", Data([1, 2, 3])), ("blob", Data([1, 2])), ("flag", true), ("folder", nil), ("created", PredicateTestGraph.date(2000)),
            ])
            return compare(leaf(key), pick(["==", "!=", key == "created" || key == "blob" ? "<" : "=="]), "", argument(value))
        default:
            let op = pick(["==", "!=", "<", ">"])
            return compare(leaf(pick(["rank", "score", "price", "created"])), op, "", argument(pick([Double.nan, nil, 1.5, Int64(2), Decimal(3)] as [Any?])))
        }
    }

    private mutating func stringComparison(_ key: String, modifier: String) -> Piece {
        let byArgument = modifier.isEmpty && !key.hasPrefix("$") && chance(10)
        if byArgument { arguments.append(key) }
        let op = pick(["==", "!=", "<", ">=", "BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE", "MATCHES", "IN"])
        let options = pick(["", "", "[c]", "[d]", "[cd]"])
        let rhs: Piece
        switch op {
        case "MATCHES": rhs = leaf(quoted(pick(["a.*", ".*e", "[a-c].*", "(apple|cherry)", ".*\\\\d.*", "é.*", ".?"])))
        case "LIKE": rhs = leaf(quoted(pick(["a*", "*e", "?pple", "*a*b?c*", "\\\\*", "*", "%_"])))
        case "IN": rhs = chance(50) ? leaf("{" + (0..<int(4)).map { _ in randomString() }.joined(separator: ", ") + "}") : argument((0..<int(4)).map { _ in pick(["apple", "Apple", "red", "cherry"]) })
        default: rhs = chance(20) ? argument(pick(["apple", "a", "e", "é", "", "STRASSE"])) : leaf(randomString())
        }
        return compare(leaf(byArgument ? "%K" : key), op, options, rhs, modifier: modifier)
    }

    private mutating func randomString() -> String {
        quoted(pick(["apple", "Apple", "a", "pp", "e", "é", "", "50%", "_", "cherry", "日本", "straße", "red", "x\\\\y"]))
    }

    private func quoted(_ text: String) -> String { "'" + text + "'" }

    private func leaf(_ text: String) -> Piece { Piece(text: text, depth: 0, nesting: 0) }

    private mutating func argument(_ value: Any?) -> Piece {
        arguments.append(value as Any)
        return leaf("%@")
    }

    private func compare(_ lhs: Piece, _ op: String, _ options: String, _ rhs: Piece, modifier: String = "") -> Piece {
        Piece(
            text: "\(modifier)\(lhs.text) \(op)\(options) \(rhs.text)", depth: 1 + max(lhs.depth, rhs.depth),
            nesting: max(lhs.nesting, rhs.nesting))
    }

    private mutating func numericList(_ count: Int) -> Piece {
        if chance(30) { return argument((0..<count).map { _ in pick([Int64(1), 2.5, Int64(7), -1.0, Int64(100)] as [Any]) }) }
        return Piece(text: "{" + (0..<count).map { _ in pick(["1", "2.5", "-1", "7", "0", "1e1"]) }.joined(separator: ", ") + "}", depth: 0, nesting: 4)
    }

    /// A number-valued expression at most `budget` deep.
    private mutating func numeric(_ budget: Int, _ variables: [String]) -> Piece {
        if budget <= 0 || chance(45) {
            switch int(10) {
            case 0...4: return leaf(pick(["rank", "serial", "score", "price", "flag", "created", "folder.rank", "tags.@count"]))
            case 5...7: return leaf(pick(["0", "1", "2", "-3", "1.5", "1000", "9223372036854775807", "2.5e3", "nil"]))
            case 8: return argument(pick([Int64(2), 1.5, Double.nan, nil, Decimal(string: "10.25")!, Int64.min] as [Any?]))
            default:
                if chance(50) {
                    arguments.append(Int64(int(20)) - 5)
                    return leaf("%d")
                }
                arguments.append(Double(int(40)) / 4 - 2)
                return leaf("%f")
            }
        }
        switch int(10) {
        case 0...5:
            let lhs = numeric(budget - 1, variables), rhs = numeric(budget - 1, variables)
            let op = pick(["+", "-", "*", "/"])
            let left = lhs.depth > 0 && (op == "*" || op == "/" || chance(50)) ? parenthesized(lhs) : lhs
            let right = rhs.depth > 0 || op == "-" || op == "/" ? parenthesized(rhs) : rhs
            return Piece(text: "\(left.text) \(op) \(right.text)", depth: 1 + max(lhs.depth, rhs.depth), nesting: max(left.nesting, right.nesting))
        case 6:
            let operand = numeric(budget - 1, variables)
            guard !operand.text.hasPrefix("-"), !operand.text.first!.isNumber else { return operand }
            let wrapped = operand.depth > 0 ? parenthesized(operand) : operand
            return Piece(text: "-" + wrapped.text, depth: operand.depth + 1, nesting: wrapped.nesting + 1)
        case 7:
            let a = numeric(budget - 1, variables), b = numeric(budget - 1, variables)
            return Piece(text: "modulus:by:(\(a.text), \(b.text))", depth: 1 + max(a.depth, b.depth), nesting: max(a.nesting, b.nesting) + 2)
        default:
            return parenthesized(numeric(budget, variables))
        }
    }
}

extension PredicateFormatGenerator {
    /// `format` with one random character deleted, inserted or replaced, or cut short.
    mutating func mutated(_ format: String) -> String {
        var characters = Array(format)
        let noise = Array("()!&|=<>'\"%{}[],.$@#-+*/ \\aZ9")
        let index = int(characters.count + 1)
        switch int(4) {
        case 0 where index < characters.count: characters.remove(at: index)
        case 1: characters.insert(pick(noise), at: index)
        case 2 where index < characters.count: characters[index] = pick(noise)
        default: characters = Array(characters.prefix(index))
        }
        return String(characters)
    }
}

/// A seeded stress test of the whole predicate pipeline: random formats (deep, long and
/// malformed ones too) must parse or fail with ``ObjectGraphError/predicateSyntax`` at an offset
/// within the format, never crash or hang, and select the same notes from SQLite as in memory.
/// It prints its seed; `OBJECTGRAPH_PREDICATE_SEED=N swift test --filter PredicateFuzz` replays it.
@Suite("Random predicate formats agree on SQLite and in memory")
struct PredicateFuzzTests {
    static let caseCount = 100_000
    static let shards = 4
    /// A hang detector, not a timing: per case, far above the normal tens of microseconds. Under
    /// load the limit of 2 s failed on cases as plain as `-3 =< serial` (2.6 s, in a debug build
    /// while the 2-core machine also compiled in release): the thread had simply not run.
    static let caseTimeLimit: TimeInterval = 15

    static let seed: UInt64 = {
        if let text = ProcessInfo.processInfo.environment["OBJECTGRAPH_PREDICATE_SEED"], let seed = UInt64(text) { return seed }
        return UInt64.random(in: 1...UInt64(UInt32.max))
    }()

    /// The generator's seed for one shard of a run (of this suite's or of the PostgreSQL one's),
    /// derived from the printed ``seed`` so that it replays every shard.
    static func seed(forShard shard: Int) -> UInt64 { seed &+ UInt64(shard) &* 0x9E37_79B9 }

    @Test(.timeLimit(.minutes(10)), arguments: 0..<shards)
    func randomFormatsNeverCrashOrHangAndAgreeOnEveryStore(shard: Int) throws {
        let seed = Self.seed(forShard: shard)
        print("PredicateFuzzTests shard \(shard): OBJECTGRAPH_PREDICATE_SEED=\(Self.seed)")
        let graph = try PredicateTestGraph()
        var generator = PredicateFormatGenerator(seed: seed)
        var parsed = 0, refused = 0
        for index in 0..<(Self.caseCount / Self.shards) {
            let start = Date()
            generator.resetArguments()
            let deep = index % 10 == 0
            generator.deep = deep
            let budget = deep ? PredicateLimits.maximumDepth - 2 + generator.int(5) : 1 + generator.int(6)
            let piece = generator.predicate(budget)
            var format = piece.text
            let malformed = index % 7 == 3
            if malformed { format = generator.mutated(format) }
            let context = "seed \(Self.seed) shard \(shard) case \(index): \(format.prefix(300))"
            let predicate = FetchPredicate(format: format, argumentArray: generator.arguments)
            let mustParse = !malformed && piece.depth <= PredicateLimits.maximumDepth && piece.nesting <= PredicateLimits.maximumNesting
            if let error = predicate.syntaxError {
                refused += 1
                #expect(!mustParse, "refused: \(error.message.prefix(300)) — \(context)")
                #expect(error.code == .predicateSyntax, "\(error.message.prefix(300)) — \(context)")
                #expect((0...format.count).contains(error.position ?? -1), "\(error.message.prefix(300)) — \(context)")
                if !mustParse && !malformed {
                    #expect(error.message.contains("levels allowed"), "\(error.message.prefix(300)) — \(context)")
                }
            } else {
                parsed += 1
                #expect(malformed || piece.depth <= PredicateLimits.maximumDepth, "accepted too deep (\(piece.depth)) — \(context)")
                #expect(predicate.node.depth <= PredicateLimits.maximumDepth, "\(context)")
                try expectAgreement(predicate, graph, strict: !malformed, context)
            }
            let elapsed = Date().timeIntervalSince(start)
            #expect(elapsed < Self.caseTimeLimit, "took \(elapsed) s — \(context)")
        }
        // The generator reaches both outcomes (a generator that only made errors would test nothing).
        #expect(parsed > Self.caseCount / Self.shards / 2)
        #expect(refused > Self.caseCount / Self.shards / 50)
    }

    /// SQL and memory select the same notes, or fail with the same code. Outside strict mode (a
    /// mutated format), memory may skip a misused key that SQL compiles: a subpredicate after a
    /// false one in an `AND` is never evaluated in memory.
    private func expectAgreement(_ predicate: FetchPredicate, _ graph: PredicateTestGraph, strict: Bool, _ context: @autoclosure () -> String) throws {
        let memory = Result { try graph.memoryKeys("Note", predicate) }
        let sql = Result { try graph.sqlKeys("Note", predicate) }
        switch (memory, sql) {
        case (.success(let m), .success(let s)):
            #expect(m == s, "SQL \(s) and memory \(m) disagree — \(context())")
        case (.failure(let m), .failure(let s)):
            #expect((m as? ObjectGraphError)?.code == (s as? ObjectGraphError)?.code, "memory: \(m), SQL: \(s) — \(context())")
            #expect((s as? ObjectGraphError)?.code == .invalidFetchRequest || !strict, "SQL: \(s) — \(context())")
        case (.success, .failure(let s)):
            #expect(!strict && (s as? ObjectGraphError)?.code == .invalidFetchRequest, "only SQL failed: \(s) — \(context())")
        case (.failure(let m), .success):
            #expect(!strict && (m as? ObjectGraphError)?.code == .invalidFetchRequest, "only memory failed: \(m) — \(context())")
        }
    }
}
