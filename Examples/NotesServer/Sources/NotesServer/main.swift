import Foundation
import NotesServerCore

// swift run NotesServer                                         notes in ./Notes.sqlite, on 127.0.0.1:8080
// swift run NotesServer --postgres postgres://user@host/db --port 8081     notes in PostgreSQL
do {
    try await NotesServer.run(try NotesServerConfiguration(arguments: Array(CommandLine.arguments.dropFirst())))
} catch {
    FileHandle.standardError.write(Data("NotesServer: \(error)\n".utf8))
    exit(1)
}
