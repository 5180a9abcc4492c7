import Dispatch
import Foundation
import Logging
import Metrics
import Synchronization
import Tracing

/// What a coordinator reports to swift-metrics and swift-distributed-tracing, and which operations
/// it logs as slow.
///
/// Both are off unless the app bootstraps a backend (`MetricsSystem.bootstrap`,
/// `InstrumentationSystem.bootstrap`) before it creates the coordinator, or passes one to
/// ``PersistentStoreCoordinator/init(managedObjectModel:name:logger:metricsFactory:tracer:)``.
/// Off, nothing is measured: no metric object exists, no span is made and no clock is read (the
/// no-op backends are recognised when the coordinator is created).
final class CoordinatorInstrumentation: Sendable {
    /// The counters and timers, or nil when metrics are off.
    let metrics: Metrics?
    /// The tracer, or nil when tracing is off.
    let tracer: (any Tracer)?
    /// Operations slower than this many nanoseconds are logged (0: none).
    let slowThreshold = Atomic<Int64>(0)

    /// The metrics a coordinator records, each labelled `objectgraph_…`, with the dimension
    /// `coordinator` when the coordinator has a name.
    struct Metrics: Sendable {
        let saves: Counter
        let saveDuration: Timer
        let savedObjects: Counter
        let fetches: Counter
        let fetchDuration: Timer
        let fetchedRows: Counter
        let faultsFromStore: Counter
        let faultDuration: Timer
        let rowCacheHits: Counter
        let rowCacheMisses: Counter
        let conflicts: Counter
        let batchRows: Counter
        let historyRows: Counter
        let merges: Counter
        let migrations: Counter

        init(factory: any MetricsFactory, dimensions: [(String, String)]) {
            func counter(_ metric: ObjectGraphMetric) -> Counter { Counter(label: metric.rawValue, dimensions: dimensions, factory: factory) }
            func timer(_ metric: ObjectGraphMetric) -> Timer { Timer(label: metric.rawValue, dimensions: dimensions, preferredDisplayUnit: .milliseconds, factory: factory) }
            saves = counter(ObjectGraphMetric.saves)
            saveDuration = timer(ObjectGraphMetric.saveDuration)
            savedObjects = counter(ObjectGraphMetric.savedObjects)
            fetches = counter(ObjectGraphMetric.fetches)
            fetchDuration = timer(ObjectGraphMetric.fetchDuration)
            fetchedRows = counter(ObjectGraphMetric.fetchedRows)
            faultsFromStore = counter(ObjectGraphMetric.faultsFromStore)
            faultDuration = timer(ObjectGraphMetric.faultDuration)
            rowCacheHits = counter(ObjectGraphMetric.rowCacheHits)
            rowCacheMisses = counter(ObjectGraphMetric.rowCacheMisses)
            conflicts = counter(ObjectGraphMetric.conflicts)
            batchRows = counter(ObjectGraphMetric.batchRows)
            historyRows = counter(ObjectGraphMetric.historyRows)
            merges = counter(ObjectGraphMetric.merges)
            migrations = counter(ObjectGraphMetric.migrations)
        }
    }

    init(coordinatorName: String?, metricsFactory: (any MetricsFactory)?, tracer: (any Tracer)?) {
        let factory = metricsFactory ?? MetricsSystem.factory
        metrics = factory is NOOPMetricsHandler
            ? nil : Metrics(factory: factory, dimensions: coordinatorName.map { [("coordinator", $0)] } ?? [])
        let tracer = tracer ?? InstrumentationSystem.tracer
        self.tracer = tracer is NoOpTracer ? nil : tracer
    }

    /// Whether an operation's duration is needed (for a timer or the slow-operation log).
    var measuresTime: Bool { metrics != nil || slowThreshold.load(ordering: .relaxed) > 0 }

    /// Whether anything is measured, traced or logged as slow: when not, operations run bare.
    var isOn: Bool { tracer != nil || measuresTime }

    /// Runs `body` in a span named `name` when tracing is on; `body` gets the span to annotate.
    @inline(__always)
    func span<T>(_ name: String, _ body: ((any Span)?) throws -> T) rethrows -> T {
        guard let tracer else { return try body(nil) }
        return try tracer.withSpan(name, ofKind: .internal) { span in try body(span) }
    }
}

/// The metrics a coordinator records (swift-metrics), by label: `ObjectGraphMetric.saves.rawValue`
/// is `"objectgraph_saves"`. Each has the dimension `coordinator` when the coordinator has a name.
public enum ObjectGraphMetric: String, CaseIterable, Sendable {
    /// Counter: saves written to the stores (one per context save that reached them).
    case saves = "objectgraph_saves"
    /// Timer: how long each save took, from the coordinator's side.
    case saveDuration = "objectgraph_save_duration"
    /// Counter: objects inserted, updated and deleted by saves.
    case savedObjects = "objectgraph_saved_objects"
    /// Counter: fetches and counts run against the stores.
    case fetches = "objectgraph_fetches"
    /// Timer: how long each fetch or count took in the stores.
    case fetchDuration = "objectgraph_fetch_duration"
    /// Counter: rows fetches returned.
    case fetchedRows = "objectgraph_fetched_rows"
    /// Counter: objects whose fault was fulfilled by reading a store.
    case faultsFromStore = "objectgraph_faults_from_store"
    /// Timer: how long each read of faulted objects from a store took.
    case faultDuration = "objectgraph_fault_duration"
    /// Counter: faults fulfilled from the row cache.
    case rowCacheHits = "objectgraph_row_cache_hits"
    /// Counter: faults the row cache could not fulfil.
    case rowCacheMisses = "objectgraph_row_cache_misses"
    /// Counter: optimistic-locking and uniqueness conflicts a save met (each resolved by a merge policy or thrown).
    case conflicts = "objectgraph_conflicts"
    /// Counter: rows inserted, updated or deleted by batch requests.
    case batchRows = "objectgraph_batch_rows"
    /// Counter: persistent-history changes recorded.
    case historyRows = "objectgraph_history_rows"
    /// Counter: saves merged into contexts (`mergeChanges`, automatic merges, remote changes).
    case merges = "objectgraph_merges"
    /// Counter: store migrations run.
    case migrations = "objectgraph_migrations"
}

extension PersistentStoreCoordinator {
    /// Operations slower than this are logged at `warning` level to ``logger`` with what they did:
    /// saves, fetches, counts, fault reads, batch requests and migrations. Nil (the default): none.
    public var slowOperationLogThreshold: Duration? {
        get {
            let nanoseconds = instrumentation.slowThreshold.load(ordering: .relaxed)
            return nanoseconds > 0 ? .nanoseconds(nanoseconds) : nil
        }
        set {
            let nanoseconds = newValue.map { $0.components.seconds * 1_000_000_000 + $0.components.attoseconds / 1_000_000_000 } ?? 0
            instrumentation.slowThreshold.store(max(nanoseconds, 0), ordering: .relaxed)
        }
    }

    /// Runs an operation, timing it when a timer or the slow-operation log wants it: records the
    /// duration in `timer` and logs it when it exceeds the threshold, described by `describe`.
    @inline(__always)
    func measured<T>(
        _ timer: KeyPath<CoordinatorInstrumentation.Metrics, Timer>?, describe: (T?) -> String, _ body: () throws -> T
    ) rethrows -> T {
        guard instrumentation.measuresTime else { return try body() }
        let started = DispatchTime.now().uptimeNanoseconds
        var result: T?
        defer {
            let elapsed = DispatchTime.now().uptimeNanoseconds &- started
            if let timer, let metrics = instrumentation.metrics { metrics[keyPath: timer].recordNanoseconds(Int64(clamping: elapsed)) }
            let threshold = instrumentation.slowThreshold.load(ordering: .relaxed)
            if threshold > 0, elapsed >= UInt64(threshold) {
                logger.warning(
                    "slow \(describe(result)) — \(String(format: "%.3f", Double(elapsed) / 1e6)) ms",
                    metadata: ["coordinator": "\(name ?? "unnamed")"])
            }
        }
        let value = try body()
        result = value
        return value
    }
}
