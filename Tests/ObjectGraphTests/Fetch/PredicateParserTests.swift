import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("Predicate format parsing")
struct PredicateParserTests {
    private func comparison(_ format: String, _ arguments: Any...) throws -> PredicateComparison {
        let predicate = FetchPredicate(format: format, argumentArray: arguments)
        try predicate.validate()
        guard case .comparison(let comparison) = predicate.node else {
            Issue.record("\(format) is not a comparison: \(predicate.node)")
            throw ObjectGraphError.predicateSyntax
        }
        return comparison
    }

    @Test(arguments: [
        ("==", PredicateComparison.Operator.equalTo), ("=", .equalTo), ("!=", .notEqualTo), ("<>", .notEqualTo),
        ("<", .lessThan), ("<=", .lessThanOrEqualTo), ("=<", .lessThanOrEqualTo), (">", .greaterThan),
        (">=", .greaterThanOrEqualTo), ("=>", .greaterThanOrEqualTo), ("BEGINSWITH", .beginsWith),
        ("endswith", .endsWith), ("Contains", .contains), ("LIKE", .like), ("matches", .matches), ("IN", .in),
    ])
    func everyComparisonOperatorIsRecognized(symbol: String, op: PredicateComparison.Operator) throws {
        let parsed = try comparison("title \(symbol) 'x'")
        #expect(parsed == PredicateComparison(
            modifier: .direct, lhs: .keyPath(["title"]), op: op, options: [], rhs: .constant(.string("x"))))
    }

    @Test func betweenTakesALiteralListOrATwoElementArgument() throws {
        #expect(try comparison("rank BETWEEN {1, 5}").rhs == .list([.int(1), .int(5)]))
        #expect(try comparison("rank between %@", [2, 3]).rhs == .list([.int(2), .int(3)]))
        #expect(try comparison("rank BETWEEN %@", [1.5, 2.5]).op == .between)
    }

    @Test(arguments: [
        ("[c]", PredicateComparison.Options.caseInsensitive), ("[d]", .diacriticInsensitive),
        ("[cd]", [.caseInsensitive, .diacriticInsensitive]), ("[DC]", [.caseInsensitive, .diacriticInsensitive]),
        ("[n]", []), ("", []),
    ] as [(String, PredicateComparison.Options)])
    func comparisonOptionsFollowTheOperator(written: String, options: PredicateComparison.Options) throws {
        #expect(try comparison("title BEGINSWITH\(written) 'x'").options == options)
        #expect(try comparison("title ==\(written) 'x'").options == options)
    }

    @Test(arguments: [
        ("'single'", Value.string("single")), ("\"double\"", .string("double")),
        ("'it\\'s'", .string("it's")), ("\"say \\\"hi\\\"\"", .string("say \"hi\"")),
        ("'tab\\tnew\\nline'", .string("tab\tnew\nline")), ("'\\u00e9'", .string("é")), ("'back\\\\slash'", .string("back\\slash")),
        ("'a\\*b'", .string("a\\*b")), ("'%@'", .string("%@")), ("''", .string("")),
        ("42", .int(42)), ("-7", .int(-7)), ("3.25", .double(3.25)), ("-0.5", .double(-0.5)), ("1e3", .double(1000)),
        ("2.5E-2", .double(0.025)), (".5", .double(0.5)),
        ("TRUE", .bool(true)), ("yes", .bool(true)), ("FALSE", .bool(false)), ("No", .bool(false)),
        ("nil", .null), ("NULL", .null),
        ("CAST(10.5, \"NSDate\")", .date(Date(timeIntervalSinceReferenceDate: 10.5))),
        ("CAST(\"1.25\", \"NSDecimalNumber\")", .decimal(Decimal(string: "1.25")!)),
        ("CAST(\"https://x.example\", \"NSURL\")", .url(URL(string: "https://x.example")!)),
    ])
    func literalsBecomeConstants(literal: String, value: Value) throws {
        #expect(try comparison("x == \(literal)").rhs == .constant(value))
    }

    @Test func keyPathsSelfAndCountAreKeyPaths() throws {
        #expect(try comparison("folder.name == 'x'").lhs == .keyPath(["folder", "name"]))
        #expect(try comparison("SELF == %@", 1).lhs == .keyPath([]))
        #expect(try comparison("self.title == 'x'").lhs == .keyPath(["title"]))
        #expect(try comparison("notes.@count > 2").lhs == .keyPath(["notes", "@count"]))
        #expect(try comparison("#in == 1").lhs == .keyPath(["in"]))
        #expect(try comparison("%K == 1", "folder.name").lhs == .keyPath(["folder", "name"]))
        #expect(try comparison("%K.@count == 1", "notes").lhs == .keyPath(["notes", "@count"]))
        #expect(try comparison("tïtle_2 == 1").lhs == .keyPath(["tïtle_2"]))
    }

    @Test func modifiersQuantifyTheLeftHandSide() throws {
        #expect(try comparison("ANY tags.name == 'x'").modifier == .any)
        #expect(try comparison("some tags.name == 'x'").modifier == .any)
        #expect(try comparison("ALL tags.name == 'x'").modifier == .all)
        #expect(try comparison("NONE tags.name == 'x'").modifier == .none)
        #expect(try comparison("%@ IN tags", 1).rhs == .keyPath(["tags"]))
    }

    @Test func andBindsTighterThanOrAndNotTighterThanAnd() throws {
        let a = PredicateNode.comparison(try comparison("a == 1"))
        let b = PredicateNode.comparison(try comparison("b == 2"))
        let c = PredicateNode.comparison(try comparison("c == 3"))
        #expect(FetchPredicate(format: "a == 1 OR b == 2 AND c == 3").node == .or([a, .and([b, c])]))
        #expect(FetchPredicate(format: "(a == 1 || b == 2) && c == 3").node == .and([.or([a, b]), c]))
        #expect(FetchPredicate(format: "NOT a == 1 AND b == 2").node == .and([.not(a), b]))
        #expect(FetchPredicate(format: "!(a == 1 and b == 2)").node == .not(.and([a, b])))
        #expect(FetchPredicate(format: "a == 1 AND b == 2 AND c == 3").node == .and([a, b, c]))
        #expect(FetchPredicate(format: "truepredicate").node == .constant(true))
        #expect(FetchPredicate(format: "FALSEPREDICATE OR a == 1").node == .or([.constant(false), a]))
    }

    @Test func argumentsOfEveryKindAreSubstituted() throws {
        let id = ManagedObjectID.temporary(for: PredicateTestGraph.model.entitiesByName["Note"]!)
        let date = Date(timeIntervalSinceReferenceDate: 5)
        let uuid = UUID()
        let optional: Int? = 4
        let cases: [(String, Any, Value)] = [
            ("%@", "text", .string("text")), ("%@", "sub"[...], .string("sub")), ("%@", 3, .int(3)),
            ("%@", Int8(-3), .int(-3)), ("%@", UInt16(7), .int(7)), ("%@", Int32(9), .int(9)), ("%@", Int64.max, .int(.max)),
            ("%@", UInt64.max, .double(Double(UInt64.max))), ("%@", 2.5, .double(2.5)), ("%@", Float(0.5), .double(0.5)),
            ("%@", true, .bool(true)), ("%@", Decimal(string: "1.1")!, .decimal(Decimal(string: "1.1")!)),
            ("%@", date, .date(date)), ("%@", Data([9]), .data(Data([9]))), ("%@", uuid, .uuid(uuid)),
            ("%@", URL(string: "https://x.example")!, .url(URL(string: "https://x.example")!)), ("%@", id, .objectID(id)),
            ("%@", NSNull(), .null), ("%@", Optional<Int>.none as Any, .null), ("%@", optional as Any, .int(4)),
            ("%d", 12, .int(12)), ("%i", Int16(12), .int(12)), ("%ld", 12, .int(12)), ("%lld", Int64(12), .int(12)),
            ("%u", UInt32(12), .int(12)), ("%d", true, .int(1)), ("%d", 3.0, .int(3)), ("%f", 1, .double(1)),
            ("%f", 2.5, .double(2.5)), ("%lf", Float(2), .double(2)), ("%g", Decimal(2), .double(2)), ("%s", "s", .string("s")),
        ]
        for (specifier, argument, value) in cases {
            #expect(try comparison("x == \(specifier)", argument).rhs == .constant(value), "\(specifier) with \(argument)")
        }
        #expect(try comparison("x IN %@", [1, 2]).rhs == .list([.int(1), .int(2)]))
        #expect(try comparison("x IN %@", ["a", nil] as [String?]).rhs == .list([.string("a"), .null]))
        #expect(try comparison("x IN %@", Set(["a"])).rhs == .list([.string("a")]))
        #expect(try comparison("x IN %@", [id]).rhs == .list([.objectID(id)]))
        #expect(FetchPredicate(format: "%K == %@ AND y == %d", "title", "t", 2).predicateFormat == "title == \"t\" AND y == 2")
        #expect(try comparison("x == '%@'", "ignored").rhs == .constant(.string("%@")))
    }

    @Test func predicateFormatWritesArgumentsAsLiteralsThatParseBack() throws {
        let uuid = UUID()
        let predicates = [
            FetchPredicate(format: "title BEGINSWITH[cd] %@ AND rank > %d", "h\"i\\\n", 3),
            FetchPredicate(format: "a == 1 OR (b == 2 AND NOT c == 3)"),
            FetchPredicate(format: "(a == 1 OR b == 2) AND c == 3"),
            FetchPredicate(format: "NOT (a == 1 OR b == 2)"),
            FetchPredicate(format: "ANY tags.name IN %@", ["x", "y"]),
            FetchPredicate(format: "ALL notes.rank BETWEEN {1, 2.5}"),
            FetchPredicate(format: "NONE notes.@count > 0 OR SELF.#in == nil OR SELF == nil"),
            FetchPredicate(format: "d == %@ AND n == %@ AND u == %@", Date(timeIntervalSinceReferenceDate: 1.25), Decimal(string: "9.99")!, uuid),
            FetchPredicate(format: "b == %@ AND l == %@ AND x == %f", Data([0, 255]), URL(string: "https://e.example/a?b")!, 1e-7),
            FetchPredicate(format: "x == %@ AND y == %@", true, -12),
            FetchPredicate(format: "t MATCHES[c] '\\\\d+' AND t LIKE '*?' AND t ENDSWITH 'é'"),
            FetchPredicate(value: true),
            FetchPredicate(value: false),
        ]
        for predicate in predicates {
            try predicate.validate()
            let reparsed = FetchPredicate(format: predicate.predicateFormat)
            #expect(reparsed == predicate, "\(predicate.predicateFormat)")
            #expect(predicate.description == predicate.predicateFormat)
        }
        #expect(FetchPredicate(format: "rank > %d", 3).predicateFormat == "rank > 3")
        #expect(FetchPredicate(format: "title ==[c] %@", "it's").predicateFormat == "title ==[c] \"it's\"")
    }

    @Test func compoundPredicatesCombineSubpredicates() throws {
        let a = FetchPredicate(format: "a == 1"), b = FetchPredicate(format: "b == 2")
        #expect(FetchPredicate.and([a, b]).predicateFormat == "a == 1 AND b == 2")
        #expect(FetchPredicate.or([a, b]).predicateFormat == "a == 1 OR b == 2")
        #expect(FetchPredicate.not(FetchPredicate.or([a, b])).predicateFormat == "NOT (a == 1 OR b == 2)")
        #expect(FetchPredicate.and([FetchPredicate.or([a, b]), a]).predicateFormat == "(a == 1 OR b == 2) AND a == 1")
        #expect(FetchPredicate.and([]).predicateFormat == "TRUEPREDICATE")
        #expect(FetchPredicate.or([]).predicateFormat == "FALSEPREDICATE")
        let bad = FetchPredicate(format: "a ==")
        #expect(throws: ObjectGraphError.predicateSyntax) { try FetchPredicate.and([a, bad]).validate() }
        #expect(throws: ObjectGraphError.predicateSyntax) { try FetchPredicate.not(bad).validate() }
    }

    @Test func aMalformedFormatIsRecordedAndThrownByValidateAndParse() throws {
        let predicate = FetchPredicate(format: "title == 'a' AND rank >")
        #expect(predicate.syntaxError != nil)
        #expect(predicate.predicateFormat == "title == 'a' AND rank >")
        let error = #expect(throws: ObjectGraphError.self) { try predicate.validate() }
        #expect(error?.code == .predicateSyntax)
        #expect(error?.position == 23)
        #expect(error?.message == "at offset 23: expected a value after '>' in \"title == 'a' AND rank >\"")
        #expect(throws: ObjectGraphError.predicateSyntax) { try FetchPredicate.parse(format: "rank > %d") }
        #expect(try FetchPredicate.parse(format: "rank > %d", 1) == FetchPredicate(format: "rank > 1"))
    }

    struct Unsupported {}

    @Test(arguments: [
        ("", [], 0, "expected a predicate"),
        ("   ", [], 3, "expected a predicate"),
        ("title == 'a' AND rank >", [], 23, "expected a value after '>'"),
        ("(rank > 1", [], 9, "expected ')' to close the '(' at offset 0"),
        ("rank > 1)", [], 8, "unmatched ')'"),
        ("rank ~ 1", [], 5, "unexpected character '~'"),
        ("rank 1", [], 5, "expected an operator after 'rank', found '1'"),
        ("title == 'abc", [], 9, "unterminated string starting at offset 9"),
        ("title == \"abc\\\"", [], 9, "unterminated string"),
        ("rank > %d", [], 7, "too few arguments: '%d' needs argument 1, but 0 were given"),
        ("a == %@ AND b == %@", [1], 17, "needs argument 2, but 1 was given"),
        ("rank > 1 junk", [], 9, "unexpected 'junk' after a complete predicate"),
        ("rank > 1 AND", [], 12, "expected a predicate after 'AND'"),
        ("title ==[x] 'a'", [], 9, "unknown comparison option 'x'"),
        ("title ==[cx] 'a'", [], 10, "unknown comparison option 'x'"),
        ("title ==[c 'a'", [], 11, "expected ']'"),
        ("rank BETWEEN 1", [], 13, "BETWEEN needs a list of two values"),
        ("rank BETWEEN {1, 2, 3}", [], 13, "BETWEEN needs a list of two values"),
        ("rank BETWEEN %@", [[1]], 13, "BETWEEN needs a list of two values"),
        ("rank & 1", [], 5, "did you mean '&&'"),
        ("rank > $x", [], 7, "variable '$x' is not defined"),
        ("rank IN {1, 2", [], 13, "expected ',' or '}' to close the '{' at offset 8"),
        ("rank IN {1, title}", [], 12, "a list may contain only values"),
        ("title == %K", [3], 9, "argument 1 for '%K' must be a key"),
        ("%K == 1", ["a..b"], 0, "not a valid key path"),
        ("rank > %d", ["x"], 7, "argument 1 for '%d' must be an integer"),
        ("rank > %d", [2.5], 7, "must be an integer"),
        ("rank > %f", ["x"], 7, "must be a number"),
        ("rank == %@", [Unsupported()], 8, "is a Unsupported, which predicates do not take"),
        ("rank == %@", [[Unsupported()]], 8, "which predicates do not take"),
        ("rank == %y", [1], 8, "unknown format specifier '%y'"),
        ("rank == %", [1], 8, "incomplete format specifier"),
        ("notes.@sum > 1", [], 6, "unsupported collection operator '@sum'"),
        ("notes.@ > 1", [], 6, "expected a collection operator"),
        ("folder. == 1", [], 8, "expected a key after '.'"),
        ("rank > 99999999999999999999", [], 7, "too large"),
        ("rank > 12abc", [], 7, "malformed number"),
        ("AND rank > 1", [], 0, "found the reserved word 'AND'"),
        ("rank > IN", [], 7, "found the reserved word 'IN'"),
        ("rank > 1 OR OR", [], 12, "found the reserved word 'OR'"),
        ("title == CAST(1, 'NSFoo')", [], 17, "unsupported CAST"),
        ("title == CAST('x', 'NSUUID')", [], 14, "cannot CAST"),
        ("()", [], 1, "expected a predicate after '('"),
        ("títle == 'é' AND rank >", [], 23, "expected a value after '>'"),
        ("rank - > 0", [], 7, "expected a value after '-'"),
        ("rank * 2 +", [], 10, "expected a value after '+'"),
        ("(rank + 1 > 0", [], 13, "expected ')' to close the '(' at offset 0"),
        ("SUBQUERY(tags, $t, $t.name == 'a') > 0", [], 35, "must be followed by '.@count'"),
        ("SUBQUERY(tags, t, t.name == 'a').@count > 0", [], 15, "expected a variable such as '$x'"),
        ("SUBQUERY(tags.@count, $t, $t.name == 'a').@count > 0", [], 9, "not a count"),
        ("SUBQUERY(tags, $t, $t.name == 'a').@count > 0 AND $t.name == 'b'", [], 50, "variable '$t' is not defined"),
        ("abs:(rank) > 1", [], 0, "unsupported function 'abs:'"),
        ("modulus:by:(rank) > 1", [], 16, "expected ','"),
        ("#1 == 1", [], 0, "expected a key after '#'"),
        ("title == '\\u12'", [], 10, "malformed '\\u' escape"),
    ] as [(String, [any Sendable], Int, String)])
    func aSyntaxErrorGivesTheOffsetOfTheMistake(format: String, arguments: [any Sendable], position: Int, message: String) {
        let error = #expect(throws: ObjectGraphError.self) {
            try FetchPredicate(format: format, argumentArray: arguments).validate()
        }
        #expect(error?.code == .predicateSyntax)
        #expect(error?.position == position, "\(error?.message ?? "")")
        #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
        #expect(error?.message.hasPrefix("at offset \(position): ") == true)
        #expect(error?.message.hasSuffix(" in \(PredicateLexicon.quote(format))") == true)
    }

    @Test func extraArgumentsAreIgnoredAsInCoreData() throws {
        #expect(try comparison("rank > %d", 1, 2, 3).rhs == .constant(.int(1)))
    }

    @Test func parsingNeverCrashesWhateverTheInput() {
        // Truncations of valid formats, and seeded random soups of tokens and characters.
        let valid = [
            "title BEGINSWITH[cd] %@ AND (rank > %d OR NOT folder.name == nil)",
            "ANY tags.name IN {'a', \"b\\\"\", 3.5e2, -1} && notes.@count BETWEEN %@ || SELF == %@",
            "CAST(\"1.5\", \"NSDecimalNumber\") < price AND title MATCHES[c] '\\\\d+' AND #in LIKE '*?'",
        ]
        var inputs: [String] = []
        for format in valid {
            let characters = Array(format)
            for end in 0...characters.count { inputs.append(String(characters[..<end])) }
            for start in 0...characters.count { inputs.append(String(characters[start...])) }
        }
        let pieces = [
            "title", "rank", ".", "@count", "@", "==", "=", "!=", "<", ">", "<=", "=>", "<>", "AND", "OR", "NOT", "!", "&&", "||",
            "(", ")", "{", "}", "[", "]", "[cd]", ",", "'", "\"", "\\", "'x'", "\"y\"", "%@", "%K", "%d", "%ld", "%", "$v",
            "#", "#in", "ANY", "ALL", "NONE", "IN", "BETWEEN", "BEGINSWITH", "LIKE", "MATCHES", "CONTAINS", "nil", "SELF",
            "TRUEPREDICATE", "CAST", "1", "-2", "3.5", "1e", ".5", "é", "👍🏽", "\u{301}", " ", "\n", "\0",
        ]
        var generator = SplitMix64(seed: 0x5EED)
        for _ in 0..<3000 {
            let count = Int(generator.next() % 12)
            var text = ""
            for _ in 0..<count {
                text += pieces[Int(generator.next() % UInt64(pieces.count))]
                if generator.next() % 3 == 0 { text += " " }
            }
            inputs.append(text)
        }
        let arguments: [Any] = ["a", 1, [1, 2], "rank"]
        for input in inputs {
            let predicate = FetchPredicate(format: input, argumentArray: arguments)
            if let error = predicate.syntaxError {
                #expect(error.code == .predicateSyntax)
                #expect((0...input.count).contains(error.position ?? -1), "\(input): \(error.message)")
            } else {
                _ = predicate.predicateFormat
            }
        }
    }
}

/// A small deterministic random number generator, so the fuzz test is reproducible.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
