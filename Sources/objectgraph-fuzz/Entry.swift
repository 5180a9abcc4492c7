import Foundation

#if OBJECTGRAPH_FUZZ
// Built for libFuzzer (Scripts/fuzz, OBJECTGRAPH_FUZZ=1): `main` hands the command line to
// libFuzzer, which calls `LLVMFuzzerTestOneInput` with each input; the target is named by OBJECTGRAPH_FUZZ_TARGET.
private let target: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["OBJECTGRAPH_FUZZ_TARGET"] ?? ""
    guard let target = FuzzTarget(rawValue: name) else {
        FileHandle.standardError.write(Data("OBJECTGRAPH_FUZZ_TARGET must be one of: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")) (it is '\(name)')\n".utf8))
        exit(2)
    }
    return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = bytes.map { Data(bytes: $0, count: count) } ?? Data()
    target.run(data)
    return 0
}

/// libFuzzer's driver (SwiftPM names an executable's entry point itself, so libFuzzer's own
/// `main` is not the program's).
@_silgen_name("LLVMFuzzerRunDriver")
private func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

@main
struct FuzzCommand {
    static func main() {
        _ = target
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(runFuzzerDriver(&argc, &argv, fuzzTestOneInput))
    }
}
#else
/// Without the fuzzer: runs inputs through a target (the seed corpus or a crash file, as a
/// regression run), or writes the generated seeds.
///
///     objectgraph-fuzz run <target> <file or folder>…
///     objectgraph-fuzz seeds <corpus folder>
@main
struct FuzzCommand {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        switch (arguments.first, arguments.count) {
        case ("run", 3...):
            guard let target = FuzzTarget(rawValue: arguments[1]) else { usage() }
            var count = 0
            for path in arguments.dropFirst(2) {
                for file in files(at: path) {
                    guard let data = FileManager.default.contents(atPath: file) else {
                        FileHandle.standardError.write(Data("cannot read \(file)\n".utf8))
                        exit(1)
                    }
                    target.run(data)
                    count += 1
                }
            }
            print("\(target.rawValue): \(count) input\(count == 1 ? "" : "s") ran without a crash")
        case ("seeds", 2):
            do { try FuzzSeeds.write(to: URL(fileURLWithPath: arguments[1])) } catch {
                FileHandle.standardError.write(Data("\(error)\n".utf8))
                exit(1)
            }
        default:
            usage()
        }
    }

    /// The file at `path`, or the files in the folder at `path`, sorted.
    static func files(at path: String) -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else { return [path] }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.filter { !$0.hasPrefix(".") }.sorted().map { path + "/" + $0 }
    }

    static func usage() -> Never {
        FileHandle.standardError.write(Data("""
            usage: objectgraph-fuzz run <target> <file or folder>…
                   objectgraph-fuzz seeds <corpus folder>
            targets: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))

            """.utf8))
        exit(2)
    }
}
#endif
