import ChaosKit
import Foundation
import Testing

@testable import ChaosNetwork

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Every URLSession task kind through stubs, conditions and HAR replay, with the request
/// body visible to matchers.
@Suite struct TaskKindsTests {
    /// Stubs that answer only a POST whose body is exactly `payload`, echoing it.
    static func bodyMatchingStubs() throws -> StubSet {
        let stubs = StubSet()
        stubs.stub(
            RequestMatcher(method: .post, path: .exact("/upload"), body: .string("payload")), name: "upload",
            .block { matched in
                NetworkResponse(status: 201, body: Data("got \(matched.request.body?.count ?? -1) bytes".utf8))
            }
        )
        stubs.stub(try .get("/file"), name: "file", .data(Data("downloaded body".utf8), contentType: "text/plain"))
        stubs.stub(try .get("/offline"), conditions: [.offline], .status(200))
        return stubs
    }

    var uploadRequest: URLRequest {
        var request = URLRequest(url: URL(string: "https://api.test/upload")!)
        request.httpMethod = "POST"
        return request
    }

    @Test func asyncUploadFromDataAndFileReachBodyMatchers() async throws {
        let stubs = try Self.bodyMatchingStubs()
        let session = session(with: stubs)
        let (data, response) = try await session.upload(for: uploadRequest, from: Data("payload".utf8))
        #expect(
            (response as? HTTPURLResponse)?.statusCode == 201 && String(decoding: data, as: UTF8.self) == "got 7 bytes")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("chaoskit-upload-\(UUID().uuidString)")
        try Data("payload".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let (fromFile, fileResponse) = try await session.upload(for: uploadRequest, fromFile: file)
        #expect(
            (fileResponse as? HTTPURLResponse)?.statusCode == 201
                && String(decoding: fromFile, as: UTF8.self) == "got 7 bytes")
        #expect(stubs.stub(named: "upload")?.hitCount == 2)
        #expect(stubs.requests.allSatisfy { $0.request.body == Data("payload".utf8) })
    }

    @Test func uploadTasksWithCompletionHandlersAndAStreamedBody() async throws {
        let stubs = try Self.bodyMatchingStubs()
        let session = session(with: stubs)
        let fromData: (Int?, String) = await withCheckedContinuation { continuation in
            session.uploadTask(with: uploadRequest, from: Data("payload".utf8)) { data, response, _ in
                continuation.resume(
                    returning: (
                        (response as? HTTPURLResponse)?.statusCode, String(decoding: data ?? Data(), as: UTF8.self)
                    ))
            }.resume()
        }
        #expect(fromData.0 == 201 && fromData.1 == "got 7 bytes")
        var streamed = uploadRequest
        streamed.httpBodyStream = InputStream(data: Data("payload".utf8))
        let (data, response) = try await session.data(for: streamed)
        #expect(
            (response as? HTTPURLResponse)?.statusCode == 201 && String(decoding: data, as: UTF8.self) == "got 7 bytes")
        // A body that differs does not match the stub.
        let other = await withCheckedContinuation { continuation in
            session.uploadTask(with: uploadRequest, from: Data("other".utf8)) { _, _, error in
                continuation.resume(returning: (error as? URLError)?.code)
            }.resume()
        }
        #expect(other == .resourceUnavailable)
    }

    @Test func asyncDownloadPutsTheBodyInTheFileURLSessionReports() async throws {
        let stubs = try Self.bodyMatchingStubs()
        let session = session(with: stubs)
        let (location, response) = try await session.download(
            for: URLRequest(url: URL(string: "https://api.test/file")!))
        defer { try? FileManager.default.removeItem(at: location) }
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect(try Data(contentsOf: location) == Data("downloaded body".utf8))
        let (fromURL, _) = try await session.download(from: URL(string: "https://api.test/file")!)
        defer { try? FileManager.default.removeItem(at: fromURL) }
        #expect(try Data(contentsOf: fromURL) == Data("downloaded body".utf8))
        // A condition on a download fails it as a real one would, without a file.
        await #expect(throws: URLError.self) {
            _ = try await session.download(from: URL(string: "https://api.test/offline")!)
        }
        do {
            _ = try await session.download(from: URL(string: "https://api.test/offline")!)
        } catch let error as URLError {
            #expect(error.code == .notConnectedToInternet)
        }
    }

    /// Both ways of answering: at once inside startLoading (a constant stub), and later from
    /// a task (a condition on the set).
    @Test(arguments: [false, true])
    func downloadTaskWithACompletionHandlerAndWithADelegate(later: Bool) async throws {
        let stubs = try Self.bodyMatchingStubs()
        if later { stubs.conditions = [.latency(.milliseconds(1))] }
        let session = session(with: stubs)
        let (handled, folder): (Data?, String?) = await withCheckedContinuation { continuation in
            session.downloadTask(with: URL(string: "https://api.test/file")!) { location, _, _ in
                continuation.resume(
                    returning: (
                        location.flatMap { try? Data(contentsOf: $0) },
                        location?.deletingLastPathComponent().lastPathComponent
                    ))
            }.resume()
        }
        #expect(handled == Data("downloaded body".utf8))
        #if canImport(FoundationNetworking)
        // In this process's own folder, which goes when the process does.
        #expect(folder == "ChaosKit-downloads-\(getpid())")
        #endif

        let delegate = DownloadDelegate()
        let configuration = URLSessionConfiguration.ephemeral
        ChaosURLProtocol.install(stubs, into: configuration)
        let delegated = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        delegated.downloadTask(with: URL(string: "https://api.test/file")!).resume()
        #expect(await delegate.finished.wait(seconds: 10))
        #expect(delegate.contents == Data("downloaded body".utf8))
        #expect(delegate.error == nil)
        delegated.finishTasksAndInvalidate()
    }

    #if canImport(FoundationNetworking)
    @Test func downloadFoldersOfEndedProcessesAreRemoved() throws {
        let temporary = FileManager.default.temporaryDirectory.appendingPathComponent("downloads-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: temporary) }
        let ended = Process()
        ended.executableURL = URL(fileURLWithPath: "/bin/true")
        try ended.run()
        ended.waitUntilExit()
        let names = ["\(ended.processIdentifier)", "\(getpid())", "1", "not-a-pid"].map { DownloadFolder.prefix + $0 }
        for name in names {
            try FileManager.default.createDirectory(
                at: temporary.appendingPathComponent(name), withIntermediateDirectories: true)
        }
        DownloadFolder.removeFoldersOfEndedProcesses(in: temporary)
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: temporary.path))
        #expect(left == Set(names.dropFirst()), "only the ended process's folder goes: \(left)")
    }
    #endif

    @Test func aConfigurationTheAppMadeItselfKeepsItsSettings() async throws {
        let stubs = StubSet()
        stubs.stub(
            RequestMatcher(headers: ["X-App": "weather"]),
            .block { matched in
                NetworkResponse(status: 200, body: Data((matched.header("Accept-Language") ?? "none").utf8))
            })
        let configuration = URLSessionConfiguration.default
        configuration.timeoutIntervalForRequest = 7
        configuration.httpAdditionalHeaders = ["X-Unrelated": "1"]
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        ChaosURLProtocol.install(stubs, into: configuration)
        #expect(configuration.timeoutIntervalForRequest == 7)
        let session = URLSession(configuration: configuration)
        var request = URLRequest(url: URL(string: "https://api.test/whatever")!)
        request.setValue("weather", forHTTPHeaderField: "X-App")
        request.setValue("cy", forHTTPHeaderField: "Accept-Language")
        let (data, _) = try await session.data(for: request)
        #expect(String(decoding: data, as: UTF8.self) == "cy")
    }

    @Test func harReplayAnswersUploadsAndDownloads() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("chaoskit-\(UUID().uuidString).har")
        defer { try? FileManager.default.removeItem(at: file) }
        // Record through a stand-in network, then replay through URLSession task kinds.
        let network = StubSet()
        network.stub(RequestMatcher(method: .post, body: .string("payload")), .string("uploaded"))
        network.stub(RequestMatcher(method: .get), .string("file contents"))
        let recorder = try HARCassette(file: file, mode: .record, network: network)
        let recording = StubSet()
        recording.add(recorder)
        _ = try await recording.respond(to: request(.post, "https://api.test/upload", body: Data("payload".utf8)))
        _ = try await recording.respond(to: request(.get, "https://api.test/file"))

        let player = try HARCassette(file: file, mode: .replayOnly)
        let stubs = StubSet()
        stubs.add(player)
        let session = session(with: stubs)
        let (uploaded, _) = try await session.upload(for: uploadRequest, from: Data("payload".utf8))
        #expect(String(decoding: uploaded, as: UTF8.self) == "uploaded")
        let (location, _) = try await session.download(from: URL(string: "https://api.test/file")!)
        defer { try? FileManager.default.removeItem(at: location) }
        #expect(try Data(contentsOf: location) == Data("file contents".utf8))
    }

    /// Cancelled while the answer is being prepared: URLSession answers the task itself
    /// (cancelled), and the protocol must not answer it a second time (swift-corelibs-foundation
    /// would resume the async caller twice, which traps).
    @Test func cancellingWhileTheAnswerIsPreparedAnswersOnce() async throws {
        let stubs = StubSet()
        stubs.stub(RequestMatcher(), conditions: [.latency(.milliseconds(30))], .string("late"))
        let session = session(with: stubs)
        for round in 0..<20 {
            let request = Task { try await session.data(from: URL(string: "https://api.test/slow/\(round)")!) }
            try await Task.sleep(for: .milliseconds(round % 2 == 0 ? 5 : 28))
            request.cancel()
            do {
                _ = try await request.value
            } catch let error as URLError {
                #expect(error.code == .cancelled)
            }
        }
        let handled: URLError.Code? = await withCheckedContinuation { continuation in
            let task = session.dataTask(with: URL(string: "https://api.test/slow/handler")!) { _, _, error in
                continuation.resume(returning: (error as? URLError)?.code)
            }
            task.resume()
            task.cancel()
        }
        #expect(handled == .cancelled)
    }

    #if canImport(Darwin)
    @Test func asyncBytes() async throws {
        let stubs = try Self.bodyMatchingStubs()
        let (bytes, _) = try await session(with: stubs).bytes(
            for: URLRequest(url: URL(string: "https://api.test/file")!))
        var data = Data()
        for try await byte in bytes { data.append(byte) }
        #expect(data == Data("downloaded body".utf8))
    }
    #endif
}

/// Collects what a download delegate is told. Its fields are written on the session's
/// delegate queue and read after `finished` is signalled; `lock` guards them.
final class DownloadDelegate: NSObject, URLSessionDownloadDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var _contents: Data?
    private var _error: (any Error)?
    let finished = Completion()

    var contents: Data? { lock.withLock { _contents } }
    var error: (any Error)? { lock.withLock { _error } }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        let data = try? Data(contentsOf: location)
        lock.withLock { _contents = data }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        lock.withLock { _error = error }
        finished.signal()
    }
}
