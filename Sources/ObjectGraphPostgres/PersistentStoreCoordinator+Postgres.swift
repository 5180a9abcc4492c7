import ObjectGraphCore

extension PersistentStoreCoordinator {
    /// Makes the PostgreSQL store (``StoreType/postgres``) available to every coordinator of the
    /// program, with its driver over PostgresNIO.
    ///
    /// Call it once, before the first PostgreSQL store is added; calling it again does nothing more.
    ///
    /// ```swift
    /// import ObjectGraph
    /// import ObjectGraphPostgres
    ///
    /// PersistentStoreCoordinator.registerPostgresStore()
    /// try coordinator.addPersistentStore(type: .postgres, at: URL(string: "postgres://app@db.internal/notes")!)
    /// ```
    ///
    /// The driver is a product of its own, `ObjectGraphPostgres`, so that a program that uses SQLite
    /// alone builds no SwiftNIO, TLS or cryptography module. Core Data registers a store class the
    /// same way (`NSPersistentStoreCoordinator.registerStoreClass(_:type:)`). Adding a PostgreSQL
    /// store in a program that has not registered it throws ``ObjectGraphError/unsupported``,
    /// saying what to add.
    public static func registerPostgresStore() {
        PostgresDrivers.register(PostgresNIODriverFactory.self)
    }
}
