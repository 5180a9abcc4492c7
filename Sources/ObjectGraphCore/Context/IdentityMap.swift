#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension ManagedObjectContext {
    /// Counts a registration, and sweeps the map when at least as many registered objects went
    /// away since the last sweep as half the entries it left (and at least 1024): a context whose
    /// objects stay alive never sweeps, and a sweep's work is paid for by the deaths it collects.
    @inline(__always)
    func noteRegistration() {
        identityMapSweep.registrations += 1
        if identityMapSweep.registrations >= 1024,
           identityMapDeaths.load(ordering: .relaxed) > max(1024, identityMapSweep.entriesAfterLastSweep / 2) {
            sweepIdentityMap()
        }
    }

    /// Drops the entries of objects that went away. An entry keeps the memory of its dead object
    /// (not its values) until then.
    func sweepIdentityMap() {
        // Deaths counted from here on may or may not be swept now: they stay counted.
        let counted = identityMapDeaths.load(ordering: .relaxed)
        registered = registered.filter { $0.value.isAlive }
        identityMapDeaths.subtract(counted, ordering: .relaxed)
        identityMapSweep = IdentityMapSweep(registrations: 0, entriesAfterLastSweep: registered.count)
    }

    /// The registered objects still alive.
    var liveObjects: [ManagedObject] { registered.values.compactMap(\.object) }
}

/// When a context's identity map is swept next.
struct IdentityMapSweep {
    /// Registrations since the last sweep (a sweep waits for 1024, so small contexts never pay for one).
    var registrations = 0
    /// How many entries the last sweep left.
    var entriesAfterLastSweep = 0
}

/// An identity-map entry: the registered object, held without keeping it alive.
typealias WeakObject = Unretained<ManagedObject>

/// A reference that does not keep its object alive, and tells whether it still is.
///
/// A weak reference would do, but Swift gives every weakly referenced object a side table, and
/// from then on each retain and release of the object goes through it: the fetch, fault and save
/// paths, which retain objects all the time, ran up to half again slower. This holds an `unowned`
/// reference instead, which is counted inline and keeps only the object's memory (not the
/// object) after the program drops the last strong reference; ``object`` then takes a strong
/// reference only if the object is not being destroyed, atomically, as loading a weak reference
/// does. So a lookup on one thread and a last release on another never race: one of them wins.
/// The memory of a dead object goes back when the reference is dropped or replaced.
struct Unretained<Object: AnyObject> {
    /// Keeps the object's memory (not the object) while the reference exists.
    private unowned let memory: Object
    private let address: UnsafeMutableRawPointer

    init(_ object: Object) {
        self.memory = object
        self.address = Unmanaged.passUnretained(object).toOpaque()
    }

    /// The object, or nil once it was destroyed (or is being destroyed).
    var object: Object? {
        guard TryRetain.strongReference(to: address) else { return nil }
        return Unmanaged<Object>.fromOpaque(address).takeRetainedValue()
    }

    /// Whether the object is still alive (it may be destroyed right after, on another thread).
    var isAlive: Bool { object != nil }
}

/// The Swift runtime's `swift_tryRetain`: a strong retain unless the object is being destroyed,
/// in one atomic step, which is what loading a weak reference does. Swift gives it no name, so it
/// is looked up once. Runtimes since Swift 5.9 return the object (null on failure); older ones
/// returned a C `bool`: a probe on a live object tells which.
private enum TryRetain {
    typealias Function = @convention(c) (UnsafeMutableRawPointer) -> UInt

    /// The function, and whether it returns a `bool` rather than the object.
    static let runtime: (function: Function, returnsBool: Bool) = {
        #if canImport(Darwin)
        let everyImage = UnsafeMutableRawPointer(bitPattern: -2)  // RTLD_DEFAULT
        #else
        let everyImage: UnsafeMutableRawPointer? = nil  // RTLD_DEFAULT
        #endif
        guard let symbol = dlsym(everyImage, "swift_tryRetain") else {
            fatalError("ObjectGraph: the Swift runtime has no swift_tryRetain; the identity map cannot hold objects")
        }
        let function = unsafeBitCast(symbol, to: Function.self)
        final class Probe {}
        let probe = Probe()
        let address = Unmanaged.passUnretained(probe).toOpaque()
        let result = function(address)
        let returnsObject = result == UInt(bitPattern: address)
        guard returnsObject || result & 0xFF == 1 else {
            fatalError("ObjectGraph: swift_tryRetain of this Swift runtime returned \(result) for a live object")
        }
        Unmanaged.passUnretained(probe).release()  // the probe's retain
        return (function, !returnsObject)
    }()

    /// Takes a strong reference to the object at `address` (+1) unless it is being destroyed.
    @inline(__always)
    static func strongReference(to address: UnsafeMutableRawPointer) -> Bool {
        let (function, returnsBool) = runtime
        let result = function(address)
        return returnsBool ? result & 0xFF != 0 : result != 0
    }
}
