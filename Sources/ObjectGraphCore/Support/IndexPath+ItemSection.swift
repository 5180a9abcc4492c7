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
        get {
            precondition(count == 2, "IndexPath.section needs an index path of two indexes (section, item); this one has \(count)")
            return self[0]
        }
        set {
            precondition(count == 2, "IndexPath.section needs an index path of two indexes (section, item); this one has \(count)")
            self[0] = newValue
        }
    }

    /// The item within the section: the second index.
    ///
    /// It is a programmer error to read it from an index path of fewer than two indexes.
    public var item: Int {
        get {
            precondition(count == 2, "IndexPath.item needs an index path of two indexes (section, item); this one has \(count)")
            return self[1]
        }
        set {
            precondition(count == 2, "IndexPath.item needs an index path of two indexes (section, item); this one has \(count)")
            self[1] = newValue
        }
    }
}
#endif
