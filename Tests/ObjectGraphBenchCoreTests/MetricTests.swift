import ObjectGraphBenchCore
import Testing

@Suite("Benchmark metrics and selection")
struct MetricTests {
    @Test("the workloads' metrics are every metric once, in the report's order")
    func workloadsPartitionMetrics() {
        #expect(BenchWorkload.allCases.flatMap(\.metrics) == Metric.allCases)
    }

    @Test("the typed metrics, and only they, go through a @Managed class")
    func typedMetrics() {
        #expect(Metric.allCases.filter { $0.access == .typed } == [.insertTyped, .fetchTyped, .updateTyped, .batchInsertTyped])
        #expect(Metric.insertTyped.workload == .insert && Metric.fetchTyped.workload == .fetch && Metric.updateTyped.workload == .update)
        #expect(Metric.batchInsertTyped.workload == .batch)
    }

    @Test("--only takes a workload (all its metrics), metrics, or both, comma-separated, in the report's order")
    func selection() {
        #expect(BenchSelection(argument: "insert")?.metrics == [.insert, .insertTyped])
        #expect(BenchSelection(argument: "update_typed,fetch")?.metrics == [.fetch, .fetchTyped, .updateTyped])
        #expect(BenchSelection(argument: "fetch_typed, fetch_typed")?.metrics == [.fetchTyped])
        #expect(BenchSelection(argument: "cachehit")?.metrics == [.cacheHit])
        #expect(BenchSelection(argument: "batch")?.metrics == [.batchInsert, .batchInsertTyped, .batchUpdate, .batchDelete])
        #expect(BenchSelection(argument: "batch_insert_typed")?.metrics == [.batchInsertTyped])
        #expect(BenchSelection(argument: "batch_delete,batched")?.metrics == [.batched, .batchDelete])
        #expect(BenchSelection(argument: "frc_merge")?.metrics == [.frcMerge])
    }

    @Test("the batch requests and frc_merge are workloads of their own, after the others, through the key-value API but for the typed batch insert")
    func batchAndResultsMetrics() {
        #expect(BenchWorkload.batch.metrics == [.batchInsert, .batchInsertTyped, .batchUpdate, .batchDelete])
        #expect(BenchWorkload.frcMerge.metrics == [.frcMerge])
        #expect(Array(Metric.allCases.suffix(5)) == [.batchInsert, .batchInsertTyped, .batchUpdate, .batchDelete, .frcMerge])
        #expect([Metric.batchInsert, .batchUpdate, .batchDelete, .frcMerge].allSatisfy { $0.access == .keyValue })
    }

    @Test("--only refuses a name that is neither a workload nor a metric")
    func badSelection() {
        #expect(BenchSelection(argument: "inserts") == nil)
        #expect(BenchSelection(argument: "fetch,nope") == nil)
        #expect(BenchSelection(argument: "") == nil)
    }
}
