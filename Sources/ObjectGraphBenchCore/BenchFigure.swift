/// A figure a run reports beside its time (a sample's extra fields), or one the runner derives for
/// a row. The raw values are the names in the JSON file, where each is prefixed by its side
/// (`objectgraph_sql_statements`).
package enum BenchFigure: String, CaseIterable, Codable, CodingKeyRepresentable, Sendable {
    // ObjectGraph's store statistics over the timed part (`fault`, `cachehit`).
    case sqlStatements = "sql_statements"
    case rowCacheHits = "row_cache_hits"
    case rowCacheMisses = "row_cache_misses"
    case faultsFromStore = "faults_from_store"
    /// `fault` with `includesPropertyValues = false`: the fetch reads IDs only, each fault its row.
    case idsOnlySeconds = "ids_only_s"
    /// `merge`: the `mergeChanges(fromContextDidSave:)` call alone, the main queue's stall.
    /// `frc_merge`: the whole `mergeChanges(fromContextDidSave:)` call, past `controllerDidChangeContent`.
    case mergeCallSeconds = "merge_call_s"
    // `readwrite`: the readers' p99 latency alone and under load, the writer's times alone and
    // with readers, the numbers of queries.
    case readerP99IdleSeconds = "reader_p99_idle_s"
    case readerP99LoadedSeconds = "reader_p99_loaded_s"
    case writerSoloSeconds = "writer_solo_s"
    case writerLoadedSeconds = "writer_loaded_s"
    case readerQueriesIdle = "reader_queries_idle"
    case readerQueriesLoaded = "reader_queries_loaded"
    /// `batched`: ObjectGraph's time per row against its time per row in `fetch`.
    case perRowVersusFetch = "per_row_vs_fetch"
}
