extension ManagedObjectContext {
    /// Drops the entries of objects that went away (amortized: after as many registrations as
    /// there are entries).
    func sweepIdentityMap() {
        registrationsSinceSweep = 0
        registered = registered.filter { $0.value.object != nil }
    }

    /// The registered objects still alive.
    var liveObjects: [ManagedObject] { registered.values.compactMap(\.object) }
}

/// An identity-map entry: the registered object, held weakly.
struct WeakObject {
    weak var object: ManagedObject?
    init(_ object: ManagedObject) { self.object = object }
}
