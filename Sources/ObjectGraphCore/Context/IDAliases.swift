/// The permanent IDs of objects that had temporary ones: a saved insert's, or an insert merged into
/// a row that already existed. An old temporary ID still resolves, in `object(with:)`, in fetched
/// values and in relationships, to the object it named.
///
/// An entry is kept only while some copy of its temporary ID exists (in the program, a change
/// set, a notification, a relationship): the table holds the object the ID's copies share without
/// keeping it alive (``ManagedObjectID/TemporaryCopies``), and drops the entries of IDs nobody
/// holds when it has doubled since it last did. A context that inserts and saves for its whole
/// life keeps entries for the temporary IDs still in use, not one for every insert it ever made.
struct IDAliases {
    private struct Entry {
        let copies: Unretained<ManagedObjectID.TemporaryCopies>
        let permanent: ManagedObjectID
    }

    private var entries: [UInt64: Entry] = [:]
    /// How many entries the last sweep left (a sweep waits for the table to double, and for 1024).
    private var countAfterLastSweep = 0

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }

    /// The permanent ID a temporary ID was given; nil for an ID without one (a permanent ID too).
    subscript(id: ManagedObjectID) -> ManagedObjectID? {
        guard case .temporary(let number, _) = id.key else { return nil }
        return entries[number]?.permanent
    }

    /// Records that `temporary` now names the object of `permanent`.
    mutating func add(_ temporary: ManagedObjectID, _ permanent: ManagedObjectID) {
        guard case .temporary(let number, let copies) = temporary.key else { return }
        entries[number] = Entry(copies: Unretained(copies), permanent: permanent)
    }

    /// Records a mapping of temporary IDs to permanent ones, then drops the entries nobody holds if
    /// the table doubled since it last did.
    mutating func add(_ mapping: [ManagedObjectID: ManagedObjectID]) {
        entries.reserveCapacity(entries.count + mapping.count)
        for (temporary, permanent) in mapping { add(temporary, permanent) }
        // The mapping's own IDs are held by the caller: none of its entries goes.
        if entries.count >= max(1024, 2 * countAfterLastSweep) { sweep() }
    }

    /// Drops the entries whose temporary ID no copy holds any more.
    mutating func sweep() {
        entries = entries.filter { $0.value.copies.isAlive }
        countAfterLastSweep = entries.count
    }

    mutating func removeAll() {
        entries = [:]
        countAfterLastSweep = 0
    }
}
