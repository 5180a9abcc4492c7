import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

// Models with the to-one shapes MacroModels.swift lacks: a required to-one, a chain of to-ones,
// a destination whose property is inherited, and a subclass root.

/// A person, on a team or not.
@Managed class Person: ManagedObject {
    var name: String = ""
    var team: Team?
}

/// A person whose `name` is inherited: a key path to it through a relationship to `Lead` goes
/// through the superclass's table.
@Managed final class Lead: Person {
    var since: Date?
}

/// A team inside another team, for key paths of several hops.
@Managed final class Team: ManagedObject {
    var name: String = ""
    var parent: Team?
    var lead: Lead?
    var shortName: String { String(name.prefix(2)) }
}

/// A ticket with a required owner, an optional team and to-many watchers.
@Managed class Ticket: ManagedObject {
    var title: String = ""
    var owner: Person
    var team: Team?
    var watchers: Set<Person> = []
}

/// A subclass that declares nothing: its key paths reach the relationships it inherits.
@Managed final class UrgentTicket: Ticket {}

/// An optional to-one to a class with a required to-one, for the one shape that cannot be resolved.
@Managed final class Desk: ManagedObject {
    var ticket: Ticket?
}

@Suite("Typed sort descriptors through to-one relationships")
struct TypedSortTests {
    /// The model of the ticket classes, built from the classes.
    static func ticketModel() -> ManagedObjectModel {
        ManagedObjectModel(types: [Person.self, Lead.self, Team.self, Ticket.self, UrgentTicket.self])
    }

    /// Teams Eng (with Core and Web inside) and Ops; people Ada (Core), Bob, Cy (a lead, Web) and
    /// Dee (a lead, leading Core; Cy leads Web); six tickets, two of them urgent.
    static func populateTickets(_ context: ManagedObjectContext) {
        func team(_ name: String, in parent: Team?) -> Team {
            let team = Team(context: context)
            team.name = name
            team.parent = parent
            return team
        }
        let eng = team("Eng", in: nil)
        let core = team("Core", in: eng)
        let web = team("Web", in: eng)
        let ops = team("Ops", in: nil)
        func person<P: Person>(_ person: P, _ name: String, on team: Team?) -> P {
            person.name = name
            person.team = team
            return person
        }
        let ada = person(Person(context: context), "Ada", on: core)
        let bob = person(Person(context: context), "Bob", on: nil)
        let cy = person(Lead(context: context), "Cy", on: web)
        let dee = person(Lead(context: context), "Dee", on: nil)
        core.lead = dee
        web.lead = cy
        let rows: [(String, Person, Team?, Bool)] = [
            ("write", bob, core, false), ("test", ada, ops, false), ("ship", cy, nil, false),
            ("plan", ada, web, false), ("fix", cy, core, true), ("page", bob, eng, true),
        ]
        for (title, owner, team, urgent) in rows {
            let ticket = urgent ? UrgentTicket(context: context) : Ticket(context: context)
            ticket.title = title
            ticket.owner = owner
            ticket.team = team
            ticket.watchers = [ada, dee]
        }
    }

    /// Titles of `T`s fetched in the order of `sorts`, then by title.
    static func titles<T: Ticket>(
        _ context: ManagedObjectContext, _: T.Type, by sorts: [SortDescriptor<T>]
    ) throws -> [String] {
        try context.fetch(FetchDescriptor<T>(sortBy: sorts + [SortDescriptor(\.title)])).map(\.title)
    }

    /// Titles of `T`s fetched in the order of the keyed descriptors, then by title.
    static func titles<T: Ticket>(_ context: ManagedObjectContext, _: T.Type, byKeys sorts: [FetchSortDescriptor]) throws -> [String] {
        try context.fetch(FetchDescriptor<T>(sortBy: sorts + [FetchSortDescriptor(key: "title")])).map(\.title)
    }

    @Test func aNonOptionalClassWithoutAnInitialValueIsARequiredToOne() throws {
        let ticket = try #require(Self.ticketModel().entitiesByName["Ticket"])
        #expect(ticket.relationshipsByName["owner"]?.isOptional == false)
        #expect(ticket.relationshipsByName["team"]?.isOptional == true)
        let stack = try TestStack(.sqlite, model: Self.ticketModel())
        let context = stack.context()
        Ticket(context: context).title = "unowned"
        let error = try #require(throws: ObjectGraphError.self) { try context.save() }
        #expect(error.code == .validation)
        #expect(error.message.contains("Ticket.owner"), "\(error)")
    }

    // MARK: - Through an optional to-one

    /// Titles of the notes ordered by `SortDescriptor(\.folder?.name, order: order)`, then by title.
    static func noteTitles(_ context: ManagedObjectContext, typed order: SortOrder) throws -> [String] {
        let descriptor = FetchDescriptor<Note>(sortBy: [SortDescriptor(\.folder?.name, order: order), SortDescriptor(\.title)])
        return try context.fetch(descriptor).map(\.title)
    }

    /// Titles of the notes ordered by `FetchSortDescriptor(key: "folder.name", ascending: ascending)`, then by title.
    static func noteTitles(_ context: ManagedObjectContext, keyed ascending: Bool) throws -> [String] {
        try context.fetch(FetchDescriptor<Note>(
            sortBy: [FetchSortDescriptor(key: "folder.name", ascending: ascending), FetchSortDescriptor(key: "title")])).map(\.title)
    }

    @Test(arguments: StoreKind.sqliteInMemoryAndPostgres)
    func anOptionalToOneSortsAsItsDottedKeyInTheStoreAndOverPendingChanges(_ kind: StoreKind) throws {
        let forward = ["Groceries", "under_score", "Hello", "apple", "hello world", "100% done", "Héllo", "Zebra"]
        let reverse = ["100% done", "Héllo", "Zebra", "Hello", "apple", "hello world", "Groceries", "under_score"]

        let stack = try TestStack(kind, model: TestModels.typed())
        let writer = stack.context("writer")
        PredicateTranslationTests.populate(writer)
        try writer.save()
        let saved = stack.context("saved")
        #expect(try Self.noteTitles(saved, typed: .forward) == forward, "notes without a folder come first")
        #expect(try Self.noteTitles(saved, keyed: true) == forward)
        #expect(try Self.noteTitles(saved, typed: .reverse) == reverse, "and last in reverse")
        #expect(try Self.noteTitles(saved, keyed: false) == reverse)

        let unsavedStack = try TestStack(kind, model: TestModels.typed())
        let unsaved = unsavedStack.context("unsaved")
        PredicateTranslationTests.populate(unsaved)
        #expect(try Self.noteTitles(unsaved, typed: .forward) == forward, "inserted, unsaved")
        #expect(try Self.noteTitles(unsaved, typed: .reverse) == reverse, "inserted, unsaved")

        // Saved notes and folders changed but not saved: the fetch sorts them in memory by their new values.
        let changed = stack.context("changed")
        let folders = try changed.fetch(FetchDescriptor<Folder>())
        try #require(folders.first { $0.name == "Work" }).name = "Archive"
        let groceries = try #require(try changed.fetch(FetchDescriptor<Note>(predicate: #Predicate { $0.title == "Groceries" })).first)
        groceries.folder = folders.first { $0.name == "Inbox" }
        let moved = ["under_score", "100% done", "Héllo", "Zebra", "Groceries", "Hello", "apple", "hello world"]
        #expect(try Self.noteTitles(changed, typed: .forward) == moved)
        #expect(try Self.noteTitles(changed, keyed: true) == moved)
        #expect(try Self.noteTitles(changed, typed: .reverse) == Self.noteTitles(changed, keyed: false))
    }

    // MARK: - Required, chained and inherited to-ones

    /// Each typed ordering, its key, and the titles it gives (ties broken by title).
    static let ticketOrders: [(SortDescriptor<Ticket>, FetchSortDescriptor, [String])] = [
        (SortDescriptor(\.owner.name), FetchSortDescriptor(key: "owner.name"), ["plan", "test", "page", "write", "fix", "ship"]),
        (SortDescriptor(\.owner.name, order: .reverse), FetchSortDescriptor(key: "owner.name", ascending: false),
         ["fix", "ship", "page", "write", "plan", "test"]),
        (SortDescriptor(\.team?.parent?.name), FetchSortDescriptor(key: "team.parent.name"),
         ["page", "ship", "test", "fix", "plan", "write"]),
        (SortDescriptor(\.owner.team?.name), FetchSortDescriptor(key: "owner.team.name"), ["page", "write", "plan", "test", "fix", "ship"]),
        (SortDescriptor(\.team?.lead?.name), FetchSortDescriptor(key: "team.lead.name"), ["page", "ship", "test", "plan", "fix", "write"]),
    ]

    @Test(arguments: StoreKind.sqliteInMemoryAndPostgres)
    func requiredChainedAndInheritedToOnesSortAsTheirDottedKeys(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: Self.ticketModel())
        let writer = stack.context("writer")
        Self.populateTickets(writer)
        try writer.save()
        let unsavedStack = try TestStack(kind, model: Self.ticketModel())
        let unsaved = unsavedStack.context("unsaved")
        Self.populateTickets(unsaved)
        for (context, state) in [(stack.context("saved"), "saved"), (unsaved, "unsaved")] {
            for (typed, keyed, expected) in Self.ticketOrders {
                #expect(try Self.titles(context, Ticket.self, by: [typed]) == expected, "\(keyed.key), \(state)")
                #expect(try Self.titles(context, Ticket.self, byKeys: [keyed]) == expected, "\(keyed.key), \(state)")
            }
            // A subclass root reaches the relationships it inherits.
            let reverseOwner = try Self.titles(context, UrgentTicket.self, by: [SortDescriptor(\.owner.name, order: .reverse)])
            #expect(reverseOwner == ["fix", "page"], "\(state)")
            #expect(try Self.titles(context, UrgentTicket.self, by: [SortDescriptor(\.owner.name)]) == ["page", "fix"], "\(state)")
            #expect(try Self.titles(context, UrgentTicket.self, by: [SortDescriptor(\.team?.name)]) == ["fix", "page"], "\(state)")
        }
    }

    // MARK: - Keys

    @Test func keyPathsThroughToOnesBecomeDottedKeys() throws {
        let folderName = try SortDescriptor(\Note.folder?.name).fetchSortDescriptor()
        #expect(folderName == FetchSortDescriptor(key: "folder.name", ascending: true))
        #expect(try SortDescriptor(\Note.folder?.name, order: .reverse).fetchSortDescriptor()
            == FetchSortDescriptor(key: "folder.name", ascending: false))
        #expect(try SortDescriptor(\Ticket.owner.name, comparator: .lexical, order: .reverse).fetchSortDescriptor()
            == FetchSortDescriptor(key: "owner.name", ascending: false, caseInsensitive: false))

        let cases: [(SortDescriptor<Ticket>, String)] = [
            (SortDescriptor(\.title), "title"),
            (SortDescriptor(\.team?.parent?.name), "team.parent.name"),
            (SortDescriptor(\.team?.lead?.name), "team.lead.name"),
            (SortDescriptor(\.team?.lead?.since), "team.lead.since"),
            (SortDescriptor(\.owner.team?.parent?.name), "owner.team.parent.name"),
            (SortDescriptor(\.team?.parent?.parent?.lead?.name), "team.parent.parent.lead.name"),
        ]
        for (descriptor, key) in cases {
            #expect(try descriptor.fetchSortDescriptor().key == key)
        }
        #expect(try SortDescriptor(\UrgentTicket.owner.team?.name).fetchSortDescriptor().key == "owner.team.name")
        #expect(try SortDescriptor(\Lead.team?.lead?.name).fetchSortDescriptor().key == "team.lead.name")
    }

    @Test func keyPathsThatAreNotStoredPropertiesThroughToOnesAreRefusedNamingTheClass() {
        let refused: [(String, () throws -> FetchSortDescriptor, String)] = [
            ("to-many", { try SortDescriptor(\Folder.notes.count).fetchSortDescriptor() }, "Folder"),
            ("to-many", { try SortDescriptor(\Ticket.watchers.count).fetchSortDescriptor() }, "Ticket"),
            ("computed", { try SortDescriptor(\Sample.computed).fetchSortDescriptor() }, "Sample"),
            ("computed through a to-one", { try SortDescriptor(\Ticket.team?.shortName).fetchSortDescriptor() }, "Ticket"),
            ("transient", { try SortDescriptor(\Note.scratch).fetchSortDescriptor() }, "Note"),
            ("objectID", { try SortDescriptor(\Note.objectID).fetchSortDescriptor() }, "Note"),
            ("a destination's objectID", { try SortDescriptor(\Ticket.team?.objectID).fetchSortDescriptor() }, "Ticket"),
            ("into an attribute", { try SortDescriptor(\Ticket.title.count).fetchSortDescriptor() }, "Ticket"),
            ("a required to-one after an optional one", { try SortDescriptor(\Desk.ticket?.owner.name).fetchSortDescriptor() }, "Desk"),
            ("five hops", { try SortDescriptor(\Ticket.team?.parent?.parent?.parent?.parent?.name).fetchSortDescriptor() }, "Ticket"),
        ]
        for (shape, make, className) in refused {
            let error = #expect(throws: ObjectGraphError.self, "\(shape)") { try make() }
            #expect(error?.code == .invalidFetchRequest, "\(shape)")
            #expect(error?.message.contains("@Managed class \(className) ") == true, "\(shape): \(error?.message ?? "")")
            #expect(error?.entityName == className, "\(shape)")
        }
    }

    @Test func aFetchWithAnUnsortableKeyPathThrows() throws {
        let stack = try TestStack(.sqlite, model: Self.ticketModel())
        let context = stack.context()
        let error = #expect(throws: ObjectGraphError.self) {
            try context.fetch(FetchDescriptor<Ticket>(sortBy: [SortDescriptor(\.watchers.count)]))
        }
        #expect(error?.code == .invalidFetchRequest)
        #expect(error?.message.contains("Ticket") == true)
    }

    // MARK: - Prefetching and properties to fetch

    @Test func prefetchingAndPropertiesToFetchResolveKeyPathsThroughToOnes() throws {
        var descriptor = FetchDescriptor<Ticket>()
        descriptor.relationshipKeyPathsForPrefetching = [\.team?.parent, \.owner, \.owner.team, \.team?.lead]
        descriptor.propertiesToFetch = [\.title, \.team?.name, \.owner.name]
        let request = try descriptor.fetchRequest(entityName: "Ticket", as: Ticket.self)
        #expect(request.relationshipKeyPathsForPrefetching == ["team.parent", "owner", "owner.team", "team.lead"])
        #expect(request.propertiesToFetch?.compactMap { $0 as? String } == ["title", "team.name", "owner.name"])

        var refused = FetchDescriptor<Ticket>()
        refused.relationshipKeyPathsForPrefetching = [\.watchers.count]
        let error = #expect(throws: ObjectGraphError.self) { try refused.fetchRequest(entityName: "Ticket", as: Ticket.self) }
        #expect(error?.code == .invalidFetchRequest)
        #expect(error?.message.contains("@Managed class Ticket ") == true)
        var notFetched = FetchDescriptor<Ticket>()
        notFetched.propertiesToFetch = [\.team?.shortName]
        #expect(throws: ObjectGraphError.self) { try notFetched.fetchRequest(entityName: "Ticket", as: Ticket.self) }
    }

    @Test func prefetchingThroughAToOneLoadsEachLevel() throws {
        let stack = try TestStack(.sqlite, model: Self.ticketModel())
        let writer = stack.context("writer")
        Self.populateTickets(writer)
        try writer.save()

        /// The names of the parents of the tickets' teams, and how many SQL statements reading them
        /// took after a fetch into a new context that prefetches `keyPaths`.
        func parentNames(prefetching keyPaths: [PartialKeyPath<Ticket>]) throws -> (names: [String], statements: Int) {
            let context = stack.context()
            var descriptor = FetchDescriptor<Ticket>(predicate: #Predicate { $0.title == "write" || $0.title == "plan" })
            descriptor.relationshipKeyPathsForPrefetching = keyPaths
            let tickets = try context.fetch(descriptor)
            let before = stack.coordinator.statistics.sqlStatements
            let names = tickets.compactMap { $0.team?.parent?.name }
            return (names, stack.coordinator.statistics.sqlStatements - before)
        }
        let prefetched = try parentNames(prefetching: [\.team?.parent])
        #expect(prefetched.names == ["Eng", "Eng"])
        #expect(prefetched.statements == 0, "both levels were fetched with the tickets")
        let faulted = try parentNames(prefetching: [])
        #expect(faulted.names == ["Eng", "Eng"])
        #expect(faulted.statements > 0, "without prefetching, reading the teams and their parents goes to the store")
    }
}
