import Foundation

// Fetches, counts, fault fulfilment and relationship reads, each in one REPEATABLE READ read-only
// transaction.
//
// A fetch is compiled by the compiler the SQLite store uses (``SQLPredicateCompiler``), in
// PostgreSQL's words (``PredicateSQL/postgres``): comparisons of every type, key paths through
// to-one relationships (joins) and to-many ones (`EXISTS` and `COUNT` subqueries), `ANY`, `ALL`,
// `NONE`, `@count`, `SUBQUERY`, sorts on every attribute and on to-one key paths, and the fetch's
// limit and offset. `[c]` and `[d]` comparisons with constants, and case-insensitive sorts, are
// exact in SQL for the rows whose text is ASCII: those rows are asked for with the whole request in
// SQL, the others (text that is not ASCII) are read and evaluated in memory, and the two are merged
// (``Plan/ASCIISplit``). What PostgreSQL cannot say as memory does otherwise
// (``SQLPredicateCompiler/NotInDialect``: `MATCHES`, arithmetic, `[c]` with a pattern read from a
// key path or through a to-many) is left to memory: the rows the rest of the predicate selects are read, and that
// part is evaluated, sorted, offset and limited with the code every store shares. The answers are
// the same; the cost is reading those rows.

extension PostgresStore {
    /// How one fetch runs: its SQL, and what is left to do in memory.
    struct Plan {
        var sql: String
        /// The fetched table (aliased `t0`) and the to-one joins the conditions read.
        var from: String
        var hasJoins: Bool
        /// The WHERE clause's conditions (on `from`), which `parameters` bind.
        var conditions: [String]
        var parameters: [PostgresValue]
        /// The conjuncts of the predicate evaluated in memory.
        var residual: [PredicateNode]
        /// Whether sorting, offset and limit are left to memory.
        var sortsInMemory: Bool
        /// How the request runs as two queries, when each part left to memory is exact in SQL for
        /// the rows whose text is ASCII.
        var split: ASCIISplit?

        /// A request whose `[c]` and `[d]` comparisons, and case-insensitive sorts, are exact in SQL
        /// for the rows whose compared texts are ASCII (or nil): those rows come from SQL with the
        /// whole request (conditions, order, and a limit of the fetch's limit plus its offset), the
        /// others are read and evaluated in memory (the residual), and memory sorts, offsets and
        /// limits the two together. When none of the others passes, PostgreSQL applies the limit
        /// and the offset to the first. Rows read: the rows whose text is not ASCII, and at most
        /// the limit (plus the offset, when one of those passes).
        struct ASCIISplit {
            /// The rows whose texts are ASCII, the request answered whole: `FROM … WHERE … ORDER BY
            /// …`, without a limit or an offset.
            var ascii: String
            var asciiParameters: [PostgresValue]
            /// The fetch's limit plus its offset (0: none): the limit when memory applies the offset.
            var limit: Int
            /// The rows whose text is not ASCII and that the conditions in SQL select, in key order
            /// (`FROM … WHERE … ORDER BY …`), bound to the plan's parameters.
            var other: String
            /// The rows of both, in one pass and in key order, bound to `asciiParameters`: for a
            /// fetch without a limit, which memory then evaluates whole.
            var either: String
        }

        /// The conditions as the WHERE clause of an `UPDATE` or a `DELETE` of the fetched table
        /// aliased `t0` (`""` when there are none): where they read joined tables, the rows the
        /// joins select, by key (an `UPDATE` or a `DELETE` joins no tables of its own).
        var rowCondition: String {
            hasJoins ? " WHERE t0.\"Z_PK\" IN (SELECT t0.\"Z_PK\" FROM \(from)\(whereClause))" : whereClause
        }

        /// ` WHERE` and the conditions (on `from`), or `""` when there are none.
        var whereClause: String { conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ") }
    }

    /// - Parameter joins: joins the selected `columns` read besides the fetched table's and the
    ///   predicate's (`LEFT JOIN …`), in the plan's statement only.
    func plan(_ request: StoreFetchRequest, columns: String, store: PersistentStore, forCount: Bool = false, joins: String = "") throws -> Plan {
        try plan(request, store: store, forCount: forCount) { _ in (columns, joins) }
    }

    /// - Parameter selecting: the selected columns, and the joins they read besides the fetched
    ///   table's and the predicate's (`LEFT JOIN …`, in the plan's statement only), given the
    ///   aliases of the to-one key paths the predicate joined (`.folder`: `t1`), which they may read.
    func plan(
        _ request: StoreFetchRequest, store: PersistentStore, forCount: Bool = false,
        selecting: (_ joinedAliases: [String: String]) -> (columns: String, joins: String)
    ) throws -> Plan {
        let entity = request.entity
        // The same checks, and errors, as the SQLite store (unknown keys, misused key paths, bad patterns).
        var checker = SQLQueryBuilder(schema: schema, entity: entity)
        if let predicate = request.predicate { _ = try checker.whereClause(for: predicate) }
        if !forCount { _ = try checker.orderByClause(for: request.sortDescriptors) }

        let compiler = SQLPredicateCompiler(
            schema: schema, root: SQLScope(alias: "t0", entity: entity), aliasCount: 0, dialect: .postgres, table: table, store: store)
        var conditions: [String] = []
        var parameters: [PostgresValue] = []
        if let restriction = schema.entityRestriction(for: entity, includesSubentities: request.includesSubentities, alias: "t0", .postgres) {
            conditions.append(restriction)
        }
        var residual: [PredicateNode] = []
        // The residual's conditions exact for ASCII text, while each is (nil once one is not).
        var asciiConditions: [SQLPredicateCompiler.ASCIICondition]? = []
        for node in request.predicate.map({ Self.conjuncts($0.node) }) ?? [] {
            do {
                let fragment = try compiler.condition(node)
                let values = try fragment.arguments.map { try $0.postgresPredicateParameter() }
                conditions.append("(" + SQLDialect.postgres.numbered(fragment.sql, from: parameters.count + 1) + ")")
                parameters += values
            } catch is SQLPredicateCompiler.NotInDialect {
                residual.append(node)
                if asciiConditions != nil {
                    do {
                        if let ascii = try compiler.asciiCondition(node) { asciiConditions?.append(ascii) } else { asciiConditions = nil }
                    } catch is SQLPredicateCompiler.NotInDialect {
                        asciiConditions = nil
                    }
                }
            }
        }
        let order = forCount ? "t0.\"Z_PK\"" : try orderBy(request.sortDescriptors, compiler, foldingASCII: false)?.terms
        // With a case-insensitive sort, or conditions left to memory, the order for ASCII text.
        let asciiOrder = forCount || order != nil ? nil : try orderBy(request.sortDescriptors, compiler, foldingASCII: true)
        var from = "\(table(for: entity)) AS t0"
        if !compiler.root.joins.isEmpty { from += " " + compiler.root.joins.joined(separator: " ") }
        var plan = Plan(
            sql: "", from: from, hasJoins: !compiler.root.joins.isEmpty, conditions: conditions, parameters: parameters,
            residual: residual, sortsInMemory: !residual.isEmpty || order == nil)
        let (columns, joins) = selecting(compiler.root.joinAliases)
        var sql = "SELECT \(columns) FROM \(from)\(joins)\(plan.whereClause)"
        if !forCount { sql += " ORDER BY " + (plan.sortsInMemory ? "t0.\"Z_PK\"" : order!) }
        if !plan.sortsInMemory && !forCount {
            if request.fetchLimit > 0 { sql += " LIMIT \(request.fetchLimit)" }
            if request.fetchOffset > 0 { sql += " OFFSET \(request.fetchOffset)" }
        }
        plan.sql = sql
        if plan.sortsInMemory, let asciiConditions, let orderTerms = forCount ? "t0.\"Z_PK\"" : (order ?? asciiOrder?.terms) {
            let texts = asciiConditions.flatMap(\.texts) + (asciiOrder?.texts ?? [])
            if !texts.isEmpty {
                plan.split = split(
                    of: plan, asciiConditions, texts: texts, order: orderTerms,
                    limit: request.fetchLimit > 0 ? request.fetchLimit + request.fetchOffset : 0)
            }
        }
        return plan
    }

    /// The two queries of a plan whose residual is exact in SQL for ASCII text.
    private func split(
        of plan: Plan, _ asciiConditions: [SQLPredicateCompiler.ASCIICondition], texts: [SQLFragment], order: String, limit: Int
    ) -> Plan.ASCIISplit? {
        let nonASCII = SQLPredicateCompiler.holdsNonASCII(texts)
        guard let values = try? nonASCII.arguments.map({ try $0.postgresPredicateParameter() }) else { return nil }
        var parameters = plan.parameters
        var conditions = plan.conditions
        // The folded comparisons first, so that PostgreSQL tests the text of the rows they select only.
        for condition in asciiConditions {
            guard let values = try? condition.fragment.arguments.map({ try $0.postgresPredicateParameter() }) else { return nil }
            conditions.append("(" + SQLDialect.postgres.numbered(condition.fragment.sql, from: parameters.count + 1) + ")")
            parameters += values
        }
        conditions.append("(" + SQLDialect.postgres.numbered(nonASCII.sql, from: parameters.count + 1) + ") IS NOT TRUE")
        parameters += values
        let otherConditions = plan.conditions + [SQLDialect.postgres.numbered(nonASCII.sql, from: plan.parameters.count + 1)]
        // Both parts in one pass: the folded comparisons (exact for ASCII text) or text that is not ASCII.
        let folded = conditions[plan.conditions.count..<(conditions.count - 1)].joined(separator: " AND ")
        let eitherConditions = asciiConditions.isEmpty
            ? plan.conditions : plan.conditions + ["((\(folded)) OR \(SQLDialect.postgres.numbered(nonASCII.sql, from: parameters.count + 1)))"]
        func rows(_ conditions: [String], _ order: String) -> String {
            "FROM \(plan.from)\(conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")) ORDER BY \(order)"
        }
        return Plan.ASCIISplit(
            ascii: rows(conditions, order), asciiParameters: parameters, limit: limit,
            other: rows(otherConditions, "t0.\"Z_PK\""), either: rows(eitherConditions, "t0.\"Z_PK\""))
    }

    /// The conjuncts of a predicate: the nodes of its top-level `AND`s, each answered in SQL or
    /// left to memory on its own.
    static func conjuncts(_ node: PredicateNode) -> [PredicateNode] {
        if case .and(let nodes) = node { return nodes.flatMap(conjuncts) }
        return [node]
    }

    /// The ORDER BY terms for `descriptors`, nil sorting first as in memory and each list ending
    /// with the row's key, so that rows that compare the same come in key order, as in memory; nil
    /// when one of them is a case-insensitive sort of strings, which PostgreSQL cannot fold as
    /// memory does, unless `foldingASCII`: then such a sort is by the text with A–Z lowered, which
    /// is memory's order for ASCII text, and `texts` are the texts it folds.
    private func orderBy(
        _ descriptors: [FetchSortDescriptor], _ compiler: SQLPredicateCompiler, foldingASCII: Bool
    ) throws -> (terms: String, texts: [SQLFragment])? {
        var terms: [String] = [], texts: [SQLFragment] = []
        let nulls = SQLDialect.postgres.predicates.nulls
        for descriptor in descriptors {
            let path = try descriptor.analyzedKeyPath(from: compiler.root.entity)
            guard case .scalar(let expression) = try compiler.compile(path, in: compiler.root) else { continue }
            var sql = expression.fragment.sql
            if descriptor.caseInsensitive && expression.valueClass == .string {
                guard foldingASCII else { return nil }
                sql = compiler.asciiLowercased(expression.fragment).sql
                texts.append(expression.fragment)
            }
            terms.append(sql + (descriptor.ascending ? " ASC" + nulls.ascending : " DESC" + nulls.descending))
        }
        terms.append("t0.\"Z_PK\"")
        return (terms.joined(separator: ", "), texts)
    }

    /// PostgreSQL's plan for the SQL of a fetch (`EXPLAIN`, one line a row), for tests and
    /// diagnosis. With `withoutSequentialScans`, the planner avoids reading whole tables where it
    /// can, so that the plan shows whether an index can answer the conditions at all.
    func explain(_ request: StoreFetchRequest, store: PersistentStore, withoutSequentialScans: Bool = false) throws -> [String] {
        let plan = try self.plan(request, columns: "t0.\"Z_PK\"", store: store)
        return try read("explaining a fetch of \(request.entity.name)") { session in
            if withoutSequentialScans { _ = try session.query("SET LOCAL enable_seqscan = off", []) }
            return try session.query("EXPLAIN " + plan.sql, plan.parameters).compactMap { row in
                if case .text(let line) = row.first { line } else { nil }
            }
        }
    }

    func fetch(_ request: StoreFetchRequest, store: PersistentStore) throws -> [StoreRow] {
        guard let layout = layouts[request.entity.rootEntity.entityCode] else { return [] }
        let plan = try fetchPlan(request, layout: layout, store: store)
        // Answered whole by PostgreSQL, a fetch is one statement.
        return try read("fetching \(request.entity.name)", oneStatement: !plan.sortsInMemory) { session in
            try fetch(request, plan: plan, layout: layout, store: store, session: session)
        }
    }

    /// A fetch whose rows come with the rows of their to-one prefetches' destinations, read in
    /// the same statement (a `LEFT JOIN` of each destination's table by key), when PostgreSQL
    /// answers the fetch whole; otherwise the fetch alone, and the context prefetches afterwards.
    func fetch(_ request: StoreFetchRequest, store: PersistentStore, destinations: inout [StoreRow]) throws -> [StoreRow] {
        guard let layout = layouts[request.entity.rootEntity.entityCode], let (plan, joins) = try prefetchingPlan(request, layout: layout, store: store) else {
            return try fetch(request, store: store)
        }
        guard plan.split == nil, !plan.sortsInMemory else { return try fetch(request, store: store) }
        let read = try self.read("fetching \(request.entity.name)", oneStatement: true) { session in
            count()
            return readJoined(try session.query(plan.sql, plan.parameters), layout: layout, joins: joins, store: store)
        }
        destinations += read.destinations
        return read.rows
    }

    /// The rows of a fetch PostgreSQL answers whole in one statement, with the rows of its to-one
    /// prefetches' destinations when they can be joined, read without a thread waiting for them;
    /// nil for a fetch that takes more (the caller fetches as usual).
    func fetchAsync(_ request: StoreFetchRequest, store: PersistentStore) async throws -> (rows: [StoreRow], destinations: [StoreRow])? {
        guard let layout = layouts[request.entity.rootEntity.entityCode] else { return ([], []) }
        let doing = "fetching \(request.entity.name)"
        if let (plan, joins) = try prefetchingPlan(request, layout: layout, store: store) {
            if plan.split == nil, !plan.sortsInMemory {
                return readJoined(try await query(plan, doing: doing), layout: layout, joins: joins, store: store)
            }
        }
        let plan = try fetchPlan(request, layout: layout, store: store)
        guard plan.split == nil, !plan.sortsInMemory else { return nil }
        let rows = try await query(plan, doing: doing).compactMap { layout.read($0, store: store) }
        rowsRead.add(rows.count)
        return (request.includesPropertyValues ? rows : rows.map { StoreRow(id: $0.id, snapshot: nil) }, [])
    }

    /// A plan's one statement, outside a transaction, awaited.
    private func query(_ plan: Plan, doing: String) async throws -> [[PostgresValue]] {
        count()
        do {
            return try await driver.query(plan.sql, plan.parameters)
        } catch let error as PostgresDriverError {
            throw translate(error, while: doing)
        }
    }

    /// The plan of a fetch with its to-one prefetches joined, and those joins: a destination the
    /// predicate already joined (`folder.id == %@` and a prefetch of `folder`) is read from the
    /// predicate's join, where a second join of the same rows would cost PostgreSQL a join more to
    /// plan and run. Nil when the fetch has no to-one prefetch to join (``prefetchJoins(_:layout:reusing:)``).
    private func prefetchingPlan(_ request: StoreFetchRequest, layout: TableLayout, store: PersistentStore) throws -> (Plan, PrefetchJoins)? {
        guard request.includesPropertyValues, !request.prefetchedToOnes.isEmpty else { return nil }
        var joins: PrefetchJoins?
        let plan = try self.plan(request, store: store) { joinedAliases in
            joins = prefetchJoins(request, layout: layout, reusing: joinedAliases)
            return (joins?.columns ?? layout.selectList, joins?.sql ?? "")
        }
        return joins.map { (plan, $0) }
    }

    /// The joins that read a fetch's to-one prefetches' destinations with its rows: the columns
    /// to select, the `LEFT JOIN`s, and where each destination's columns start in a row. Nil when
    /// the fetch reads no values or has no such prefetch.
    ///
    /// - Parameter joinedAliases: the aliases of the to-one key paths the predicate joins (by
    ///   ``SQLScope/joinAliases``' keys, `.folder`): a destination joined there is read from that join.
    private func prefetchJoins(_ request: StoreFetchRequest, layout: TableLayout, reusing joinedAliases: [String: String]) -> PrefetchJoins? {
        guard request.includesPropertyValues, !request.prefetchedToOnes.isEmpty else { return nil }
        var joins = PrefetchJoins(columns: layout.selectList)
        for relationship in request.prefetchedToOnes {
            guard let destination = relationship.destinationEntity, let target = layouts[destination.rootEntity.entityCode] else { continue }
            let alias: String
            if let joined = joinedAliases["." + relationship.name] {
                alias = joined
            } else {
                alias = "p\(joins.joined.count)"
                joins.sql += " LEFT JOIN \(target.table) AS \(alias) ON \(alias).\"Z_PK\" = t0.\(CoreDataLayout.quote(schema.columnName(for: relationship)))"
            }
            joins.columns += ", " + target.selectList(alias: alias)
            joins.joined.append((target, (joins.joined.last.map { $0.start + $0.layout.selectedColumnCount } ?? layout.selectedColumnCount)))
        }
        return joins.joined.isEmpty ? nil : joins
    }

    struct PrefetchJoins {
        var columns: String
        var sql = ""
        var joined: [(layout: TableLayout, start: Int)] = []
    }

    /// The rows of a joined fetch's statement, and their destinations: each destination once, and
    /// none that is also one of the rows.
    private func readJoined(
        _ selected: [[PostgresValue]], layout: TableLayout, joins: PrefetchJoins, store: PersistentStore
    ) -> (rows: [StoreRow], destinations: [StoreRow]) {
        var rows: [StoreRow] = []
        rows.reserveCapacity(selected.count)
        for row in selected { if let read = layout.read(row, store: store) { rows.append(read) } }
        rowsRead.add(rows.count)
        var destinations: [StoreRow] = []
        var seen: [ObjectIdentifier: Set<Int64>] = [:]
        if joins.joined.contains(where: { $0.layout === layout }) { seen[ObjectIdentifier(layout)] = Set(rows.compactMap(\.id.primaryKey)) }
        for row in selected {
            for (target, start) in joins.joined {
                let end = start + target.selectedColumnCount
                guard end <= row.count, let key = row[start].integer, seen[ObjectIdentifier(target), default: []].insert(key).inserted,
                      let read = target.read(Array(row[start..<end]), store: store) else { continue }
                destinations.append(read)
            }
        }
        return (rows, destinations)
    }

    func fetch(_ request: StoreFetchRequest, layout: TableLayout, store: PersistentStore, session: any PostgresSession) throws -> [StoreRow] {
        try fetch(request, plan: try fetchPlan(request, layout: layout, store: store), layout: layout, store: store, session: session)
    }

    /// The plan of a fetch: of the rows' keys only, unless values are wanted or memory has to
    /// evaluate or sort the rows.
    private func fetchPlan(_ request: StoreFetchRequest, layout: TableLayout, store: PersistentStore) throws -> Plan {
        let keys = "t0.\"Z_PK\", t0.\"Z_ENT\", t0.\"Z_OPT\""
        let plan = try self.plan(request, columns: request.includesPropertyValues ? layout.selectList : keys, store: store)
        if plan.sortsInMemory && !request.includesPropertyValues { return try self.plan(request, columns: layout.selectList, store: store) }
        return plan
    }

    private func fetch(_ request: StoreFetchRequest, plan: Plan, layout: TableLayout, store: PersistentStore, session: any PostgresSession) throws -> [StoreRow] {
        let view = PostgresReadView(backend: self, session: session, store: store)
        if let split = plan.split {
            // The rows whose text is ASCII, answered whole in SQL, and the others, evaluated here.
            if request.fetchLimit == 0 {
                // Without a limit, one pass reads both; memory evaluates the rest of the predicate
                // (exact in SQL already for the ASCII rows) and sorts.
                count()
                let rows = try session.query("SELECT \(layout.selectList) \(split.either)", split.asciiParameters).compactMap { layout.read($0, store: store) }
                rowsRead.add(rows.count)
                return try request.rows(of: residualMatches(rows, plan, view: view))
            }
            // When none of the others passes, PostgreSQL applies the offset too.
            count(2)
            let otherRows = try session.query("SELECT \(layout.selectList) \(split.other)", plan.parameters).compactMap { layout.read($0, store: store) }
            let others = try residualMatches(otherRows, plan, view: view)
            var sql = "SELECT \(layout.selectList) \(split.ascii)"
            if others.isEmpty {
                if request.fetchLimit > 0 { sql += " LIMIT \(request.fetchLimit)" }
                if request.fetchOffset > 0 { sql += " OFFSET \(request.fetchOffset)" }
            } else if split.limit > 0 {
                sql += " LIMIT \(split.limit)"
            }
            let ascii = try session.query(sql, split.asciiParameters).compactMap { layout.read($0, store: store) }
            rowsRead.add(ascii.count + otherRows.count)
            if others.isEmpty { return request.includesPropertyValues ? ascii : ascii.map { StoreRow(id: $0.id, snapshot: nil) } }
            // In key order, as memory's sort keeps rows that compare the same.
            let subjects = (ascii.map { PostgresRowSubject(view: view, id: $0.id, snapshot: $0.snapshot!) } + others)
                .sorted { ($0.id.primaryKey ?? 0) < ($1.id.primaryKey ?? 0) }
            return try request.rows(of: subjects)
        }
        count()
        let rows = try session.query(plan.sql, plan.parameters).compactMap { layout.read($0, store: store) }
        rowsRead.add(rows.count)
        guard plan.sortsInMemory else {
            return request.includesPropertyValues ? rows : rows.map { StoreRow(id: $0.id, snapshot: nil) }
        }
        return try request.rows(of: residualMatches(rows, plan, view: view))
    }

    /// The rows that pass the part of the predicate left to memory, as subjects to sort.
    private func residualMatches(_ rows: [StoreRow], _ plan: Plan, view: PostgresReadView) throws -> [PostgresRowSubject] {
        let subjects = rows.map { PostgresRowSubject(view: view, id: $0.id, snapshot: $0.snapshot!) }
        if plan.residual.isEmpty { return subjects }
        let node = plan.residual.count == 1 ? plan.residual[0] : .and(plan.residual)
        return try subjects.filter { try PredicateEvaluator.evaluate(node, with: $0) }
    }

    /// The keys of the rows a fetch returns: `"Z_PK"` and `"Z_ENT"` only, when PostgreSQL answers
    /// the whole request (a batched fetch's first step, so it reads two numbers a row, and no row's
    /// values); otherwise the keys of the rows `fetch` returns.
    func fetchKeys(_ request: StoreFetchRequest, store: PersistentStore) throws -> (keys: [Int64], entityCodes: [Int32]) {
        guard let layout = layouts[request.entity.rootEntity.entityCode] else { return ([], []) }
        var request = request
        request.includesPropertyValues = false
        let plan = try self.plan(request, columns: "t0.\"Z_PK\", t0.\"Z_ENT\"", store: store)
        return try read("fetching \(request.entity.name) keys", oneStatement: !plan.sortsInMemory) { session in
            guard !plan.sortsInMemory else { return StoreRow.keys(of: try fetch(request, layout: layout, store: store, session: session)) }
            count()
            var keys: [Int64] = [], codes: [Int32] = []
            try session.forEachRow(plan.sql, plan.parameters) { row in
                // A row of an entity the model lacks is skipped, as `fetch` skips it.
                guard row.count >= 2, let pk = row[0].integer, let number = row[1].integer, layout.entities[Int(number)] != nil,
                      let entity = schema.entity(forNumber: Int(number)) else { return }
                keys.append(pk)
                codes.append(Int32(entity.entityCode))
            }
            rowsRead.add(keys.count)
            return (keys, codes)
        }
    }

    func count(_ request: StoreFetchRequest, store: PersistentStore) throws -> Int {
        guard layouts[request.entity.rootEntity.entityCode] != nil else { return 0 }
        let plan = try self.plan(request, columns: "1", store: store, forCount: true)
        if let split = plan.split, let layout = layouts[request.entity.rootEntity.entityCode] {
            // The rows whose text is ASCII counted in SQL, the others read and evaluated here.
            return try read("counting \(request.entity.name)") { session in
                count(2)
                let ascii = Int(try session.query("SELECT COUNT(*) FROM (SELECT 1 \(split.ascii)) AS counted", split.asciiParameters).first?.first?.integer ?? 0)
                let rows = try session.query("SELECT \(layout.selectList) \(split.other)", plan.parameters).compactMap { layout.read($0, store: store) }
                rowsRead.add(1 + rows.count)
                let view = PostgresReadView(backend: self, session: session, store: store)
                var total = max(0, ascii + (try residualMatches(rows, plan, view: view).count) - request.fetchOffset)
                if request.fetchLimit > 0 { total = min(total, request.fetchLimit) }
                return total
            }
        }
        if !plan.residual.isEmpty {
            var request = request
            request.sortDescriptors = []
            return try fetch(request, store: store).count
        }
        var sql = "SELECT COUNT(*) FROM (\(plan.sql)"
        if request.fetchLimit > 0 { sql += " LIMIT \(request.fetchLimit)" }
        if request.fetchOffset > 0 { sql += " OFFSET \(request.fetchOffset)" }
        sql += ") AS counted"
        return try read("counting \(request.entity.name)", oneStatement: true) { session in
            count()
            rowsRead.add(1)
            return Int(try session.query(sql, plan.parameters).first?.first?.integer ?? 0)
        }
    }

    func snapshots(for ids: [ManagedObjectID], store: PersistentStore) throws -> [ManagedObjectID: Snapshot] {
        if ids.isEmpty { return [:] }
        let chunks = TableLayout.chunks(of: ids, in: layouts, size: TableLayout.keysPerStatement)
        return try read("reading objects", oneStatement: chunks.count == 1) { session in
            try readSnapshots(chunks, count: ids.count, store: store, session: session)
        }
    }

    /// Reads rows by ID, in the caller's transaction.
    func readSnapshots(_ ids: [ManagedObjectID], store: PersistentStore, session: any PostgresSession) throws -> [ManagedObjectID: Snapshot] {
        try readSnapshots(TableLayout.chunks(of: ids, in: layouts, size: TableLayout.keysPerStatement), count: ids.count, store: store, session: session)
    }

    /// Reads rows by key, a statement a chunk.
    private func readSnapshots(
        _ chunks: [(layout: TableLayout, keys: ArraySlice<Int64>)], count ids: Int, store: PersistentStore, session: any PostgresSession
    ) throws -> [ManagedObjectID: Snapshot] {
        var result: [ManagedObjectID: Snapshot] = [:]
        result.reserveCapacity(ids)
        for (layout, chunk) in chunks {
            count()
            for row in try session.query(layout.rowsQuery(count: chunk.count, dialect: .postgres), chunk.map { .int($0) }) {
                if let storeRow = layout.read(row, store: store), let snapshot = storeRow.snapshot { result[storeRow.id] = snapshot }
            }
        }
        return result
    }

    func destinations(of relationship: RelationshipDescription, for sources: [ManagedObjectID], store: PersistentStore) throws
        -> [ManagedObjectID: [ManagedObjectID]]
    {
        // Up to a statement's worth of sources, one statement.
        try read("reading \(relationship.entity?.name ?? "").\(relationship.name)", oneStatement: sources.count <= TableLayout.keysPerStatement) { session in
            try readDestinations(of: relationship, for: sources, store: store, session: session)
        }
    }

    /// Reads the destinations of a to-many relationship, in the caller's transaction.
    func readDestinations(of relationship: RelationshipDescription, for sources: [ManagedObjectID], store: PersistentStore, session: any PostgresSession) throws
        -> [ManagedObjectID: [ManagedObjectID]]
    {
        guard let destination = relationship.destinationEntity else { return [:] }
        var bySource: [Int64: ManagedObjectID] = [:]
        for id in sources { if let pk = id.primaryKey { bySource[pk] = id } }
        let keys = Array(bySource.keys).sorted()
        var result: [ManagedObjectID: [ManagedObjectID]] = [:]
        for id in sources { result[id] = [] }
        for chunk in TableLayout.statementChunks(keys) {
            guard let sql = schema.destinationsQuery(of: relationship, count: chunk.count, dialect: .postgres, table: table) else { break }
            count()
            for row in try session.query(sql, chunk.map { .int($0) }) {
                guard row.count >= 3, let sourceKey = row[0].integer, let destinationKey = row[1].integer, let source = bySource[sourceKey] else { continue }
                let entity = schema.destinationEntity(forNumber: row[2].integer.map { Int($0) }, of: destination)
                result[source, default: []].append(ManagedObjectID(entity: entity, store: store, primaryKey: destinationKey))
            }
        }
        return result
    }
}

/// The rows one fetch reads to evaluate in memory what PostgreSQL cannot answer exactly: related
/// rows are read on first use, in the fetch's transaction, and kept for the rest of the fetch.
final class PostgresReadView: RowView {
    let backend: PostgresStore
    let session: any PostgresSession
    let store: PersistentStore
    private var rows: [ManagedObjectID: Snapshot?] = [:]
    private var toMany: [ObjectIdentifier: [ManagedObjectID: [ManagedObjectID]]] = [:]

    init(backend: PostgresStore, session: any PostgresSession, store: PersistentStore) {
        self.backend = backend
        self.session = session
        self.store = store
    }

    func subject(for id: ManagedObjectID) throws -> PostgresRowSubject? {
        if rows[id] == nil {
            rows[id] = .some(try backend.readSnapshots([id], store: store, session: session)[id])
        }
        guard let snapshot = rows[id] ?? nil else { return nil }
        return PostgresRowSubject(view: self, id: ManagedObjectID(entity: snapshot.entity, store: store, primaryKey: id.primaryKey ?? -1), snapshot: snapshot)
    }

    func destinations(of relationship: RelationshipDescription, from id: ManagedObjectID) throws -> [ManagedObjectID] {
        let key = ObjectIdentifier(relationship)
        if let known = toMany[key]?[id] { return known }
        let found = try backend.readDestinations(of: relationship, for: [id], store: store, session: session)[id] ?? []
        toMany[key, default: [:]][id] = found
        return found
    }
}

/// A row of a PostgreSQL store seen by predicates and sort descriptors evaluated in memory.
typealias PostgresRowSubject = RowSubject<PostgresReadView>
