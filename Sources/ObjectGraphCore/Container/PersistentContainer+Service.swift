import ServiceLifecycle

/// A container is a swift-service-lifecycle `Service`: in a `ServiceGroup`, it waits for graceful
/// shutdown (SIGTERM, SIGINT, or `triggerGracefulShutdown()`), then drains the saves in flight and
/// closes the stores.
///
/// ```swift
/// let container = PersistentContainer(name: "Notes", managedObjectModel: model)
/// try container.loadPersistentStores()
/// container.shutdownTimeout = .seconds(20)
/// let group = ServiceGroup(configuration: .init(
///     services: [container, httpServer],          // shut down in reverse order: the server first
///     gracefulShutdownSignals: [.sigterm, .sigint],
///     logger: logger))
/// try await group.run()
/// ```
///
/// A service group shuts its services down in reverse order, so list the container before the
/// services that save through it: they stop taking requests first, and the container then waits
/// for the saves they started.
extension PersistentContainer: Service {
    /// Waits for graceful shutdown (or cancellation), then runs ``shutdown(timeout:)-1mp4x``
    /// with ``shutdownTimeout``. Cancellation does not skip the drain: saves in flight are worth the wait.
    ///
    /// - Throws: ``PersistentContainerError/shutdownTimedOut`` when saves are still running when
    ///   ``shutdownTimeout`` passes (the service group logs it).
    public func run() async throws {
        do {
            try await gracefulShutdown()
        } catch is CancellationError {
            // Cancelled rather than shut down gracefully: drain all the same.
        }
        try await shutdown(timeout: shutdownTimeout)
    }
}
