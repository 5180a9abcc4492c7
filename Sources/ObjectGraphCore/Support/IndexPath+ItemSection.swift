import Foundation

#if !canImport(UIKit) && !canImport(AppKit)
extension IndexPath {
    /// An index path for a row (`item`) in a section, as UIKit and AppKit give it; ObjectGraph gives
    /// it where neither exists, for ``FetchedResultsController``.
    ///
    /// ```swift
    /// let first = IndexPath(item: 0, section: 0)
    /// ```
    public init(item: Int, section: Int) {
        self.init(indexes: [section, item])
    }

    /// The section: the first index.
    ///
    /// It is a programmer error to read it from an index path of fewer than two indexes.
    public var section: Int {
        get { self[pair: 0, "section"] }
        set { self[pair: 0, "section"] = newValue }
    }

    /// The item within the section: the second index.
    ///
    /// It is a programmer error to read it from an index path of fewer than two indexes.
    public var item: Int {
        get { self[pair: 1, "item"] }
        set { self[pair: 1, "item"] = newValue }
    }

    /// The index at `position` of a (section, item) pair; `name` is the property that asks.
    private subscript(pair position: Int, name: String) -> Int {
        get {
            requirePair(name)
            return self[position]
        }
        set {
            requirePair(name)
            self[position] = newValue
        }
    }

    /// Stops with a message naming `name` unless the index path is a (section, item) pair.
    private func requirePair(_ name: String) {
        precondition(count == 2, "IndexPath.\(name) needs an index path of two indexes (section, item); this one has \(count)")
    }
}
#endif
