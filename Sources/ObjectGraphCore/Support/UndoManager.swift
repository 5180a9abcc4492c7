import Foundation

#if canImport(Darwin)
/// Foundation's undo manager, which a context uses for ``ManagedObjectContext/undo()`` and
/// ``ManagedObjectContext/redo()``.
public typealias UndoManager = Foundation.UndoManager
#else
/// A recorder of undo and redo actions with Foundation's `UndoManager` API, for platforms whose
/// Foundation has none (Linux, Windows, Android).
///
/// ```swift
/// context.undoManager = ObjectGraph.UndoManager()
/// note.setValue("Draft", forKey: "title")
/// context.processPendingChanges()      // closes the group the change opened
/// context.undo()                       // the title is what it was
/// ```
///
/// Actions are recorded in groups, and ``undo()`` reverses the most recent group, registering its
/// own reversal for ``redo()``. With ``groupsByEvent`` (the default), registering outside any group
/// opens one, which the next ``undo()`` closes; a context closes the groups it opens at
/// `processPendingChanges()`. Targets are not retained: an action whose target is gone is skipped.
///
/// Like Foundation's, it is not thread-safe: use it on one queue (a context's).
///
/// It is a programmer error to call ``endUndoGrouping()`` with no group open, or ``undo()`` or
/// ``redo()`` with more than one group open.
open class UndoManager {
    private enum Entry {
        case action(Action)
        case group(Group)
    }

    private struct Action {
        weak var target: AnyObject?
        let handler: (AnyObject) -> Void
    }

    private final class Group {
        var entries: [Entry] = []
        var actionName = ""
        /// Whether nothing in it would run (an action whose target is gone runs nothing).
        var isEmpty: Bool {
            entries.allSatisfy { entry in
                switch entry {
                case .group(let group): group.isEmpty
                case .action(let action): action.target == nil
                }
            }
        }
    }

    private var undoStack: [Group] = []
    private var redoStack: [Group] = []
    /// The groups open, outermost first.
    private var open: [Group] = []
    /// Whether the outermost open group was opened by a registration (``groupsByEvent``).
    private var openedByEvent = false
    private var disabledCount = 0

    /// Whether registering an action outside any group opens one (closed by the next ``undo()``).
    open var groupsByEvent = true
    /// How many groups of undo are kept; 0 (the default) keeps all.
    open var levelsOfUndo = 0 {
        didSet { trim() }
    }
    /// Whether ``undo()`` is running.
    open private(set) var isUndoing = false
    /// Whether ``redo()`` is running.
    open private(set) var isRedoing = false

    /// Creates an undo manager with nothing to undo.
    public init() {}

    /// How many groups are open.
    open var groupingLevel: Int { open.count }
    /// Whether registrations are recorded.
    open var isUndoRegistrationEnabled: Bool { disabledCount == 0 }
    /// Whether there is something to undo.
    open var canUndo: Bool {
        if let outermost = open.first, !outermost.isEmpty { return true }
        return undoStack.contains { !$0.isEmpty }
    }
    /// Whether there is something to redo.
    open var canRedo: Bool { !redoStack.isEmpty }
    /// The name of the group ``undo()`` would reverse.
    open var undoActionName: String { (open.first ?? undoStack.last)?.actionName ?? "" }
    /// The name of the group ``redo()`` would reverse.
    open var redoActionName: String { redoStack.last?.actionName ?? "" }

    // MARK: - Grouping

    /// Opens a group: the actions registered until the matching ``endUndoGrouping()`` are undone
    /// together.
    open func beginUndoGrouping() {
        open.append(Group())
    }

    /// Closes the innermost group.
    ///
    /// It is a programmer error to call it with no group open.
    open func endUndoGrouping() {
        guard let group = open.popLast() else {
            fatalError("ObjectGraph.UndoManager: endUndoGrouping() with no group open")
        }
        if let outer = open.last {
            if !group.isEmpty { outer.entries.append(.group(group)) }
            return
        }
        openedByEvent = false
        guard !group.isEmpty else { return }
        if isUndoing {
            redoStack.append(group)
        } else {
            undoStack.append(group)
            trim()
        }
    }

    /// Stops recording registrations until ``enableUndoRegistration()``; calls nest.
    open func disableUndoRegistration() { disabledCount += 1 }

    /// Records registrations again, once every ``disableUndoRegistration()`` is balanced.
    open func enableUndoRegistration() {
        precondition(disabledCount > 0, "ObjectGraph.UndoManager: enableUndoRegistration() without disableUndoRegistration()")
        disabledCount -= 1
    }

    /// Names the group being recorded (or the last one): the name of the action a user undoes.
    open func setActionName(_ actionName: String) {
        (open.first ?? undoStack.last)?.actionName = actionName
    }

    // MARK: - Registering

    /// Records an action that undoes a change: `handler` is called with `target` when the change is
    /// undone. Registered while undoing, it is recorded for redo instead.
    ///
    /// ```swift
    /// undoManager.registerUndo(withTarget: note) { note in note.title = oldTitle }
    /// ```
    open func registerUndo<TargetType: AnyObject>(withTarget target: TargetType, handler: @escaping (TargetType) -> Void) {
        guard isUndoRegistrationEnabled else { return }
        if open.isEmpty {
            guard groupsByEvent || isUndoing || isRedoing else {
                fatalError("ObjectGraph.UndoManager: registerUndo(withTarget:handler:) with no group open and groupsByEvent off")
            }
            beginUndoGrouping()
            openedByEvent = !isUndoing && !isRedoing
        }
        // A new change makes what was undone unreachable.
        if !isUndoing && !isRedoing { redoStack = [] }
        open[open.count - 1].entries.append(.action(Action(target: target) { handler($0 as! TargetType) }))
    }

    // MARK: - Undoing and redoing

    /// Undoes the most recent group (closing the group ``groupsByEvent`` opened, if any), and
    /// records its reversal for ``redo()``.
    ///
    /// It is a programmer error to call it inside a group the program opened.
    open func undo() {
        if openedByEvent && open.count == 1 { endUndoGrouping() }
        guard open.isEmpty else {
            fatalError("ObjectGraph.UndoManager: undo() with \(open.count) undo group(s) open; close them first")
        }
        undoNestedGroup()
    }

    /// Undoes the most recent group at the current level: with no group open, the last group
    /// recorded; inside a group, the last group nested in it.
    open func undoNestedGroup() {
        let group: Group
        if let current = open.last {
            guard let index = current.entries.lastIndex(where: { if case .group = $0 { true } else { false } }),
                  case .group(let nested) = current.entries.remove(at: index) else { return }
            group = nested
        } else {
            guard let last = undoStack.popLast() else { return }
            group = last
        }
        isUndoing = true
        defer { isUndoing = false }
        let reversal = Group()
        reversal.actionName = group.actionName
        open.append(reversal)
        perform(group)
        endUndoGrouping()
    }

    /// Redoes the group most recently undone, and records its reversal for ``undo()``.
    ///
    /// It is a programmer error to call it with a group open.
    open func redo() {
        guard open.isEmpty else {
            fatalError("ObjectGraph.UndoManager: redo() with \(open.count) undo group(s) open; close them first")
        }
        guard let group = redoStack.popLast() else { return }
        isRedoing = true
        let reversal = Group()
        reversal.actionName = group.actionName
        open.append(reversal)
        perform(group)
        open.removeLast()
        isRedoing = false
        if !reversal.isEmpty {
            undoStack.append(reversal)
            trim()
        }
    }

    /// Forgets every undo and redo action.
    open func removeAllActions() {
        undoStack = []
        redoStack = []
        open = []
        openedByEvent = false
    }

    /// Forgets the actions registered with `target`.
    open func removeAllActions(withTarget target: AnyObject) {
        func strip(_ group: Group) {
            group.entries.removeAll { entry in
                switch entry {
                case .action(let action): return action.target == nil || action.target === target
                case .group(let nested):
                    strip(nested)
                    return nested.isEmpty
                }
            }
        }
        for group in undoStack + redoStack + open { strip(group) }
        undoStack.removeAll(where: \.isEmpty)
        redoStack.removeAll(where: \.isEmpty)
    }

    // MARK: - Private

    /// Runs a group's actions, the most recent first.
    private func perform(_ group: Group) {
        for entry in group.entries.reversed() {
            switch entry {
            case .action(let action):
                if let target = action.target { action.handler(target) }
            case .group(let nested):
                beginUndoGrouping()
                perform(nested)
                endUndoGrouping()
            }
        }
    }

    private func trim() {
        guard levelsOfUndo > 0, undoStack.count > levelsOfUndo else { return }
        undoStack.removeFirst(undoStack.count - levelsOfUndo)
    }
}
#endif
