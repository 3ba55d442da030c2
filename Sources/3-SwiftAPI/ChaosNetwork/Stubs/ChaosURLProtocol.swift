import ChaosKit
import Foundation
import HTTPTypes
import HTTPTypesFoundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Intercepts URLSession traffic: requests go through the ``ChaosNetwork/send`` point and
/// are answered by a ``StubSet`` (its stubs, responders, conditions and unmatched policy).
///
/// Per session (recommended; parallel tests stay apart):
/// ```swift
/// let stubs = StubSet()
/// let configuration = URLSessionConfiguration.ephemeral
/// ChaosURLProtocol.install(stubs, into: configuration)
/// let session = URLSession(configuration: configuration)
/// ```
/// Each installed set gets its own subclass of this protocol (a generic "slot" class),
/// which is what the configuration lists: on Linux neither `httpAdditionalHeaders` nor
/// anything else of the configuration reaches a URLProtocol, but its class does. The
/// protocol keeps the set weakly, so keep a reference to it while the session is used.
///
/// For `URLSession.shared` call ``registerGlobally(_:)`` **before anything creates a
/// URLSession** (on Linux a class registered later is ignored, and `.default`/`.ephemeral`
/// configurations never pick up registered classes: use ``install(_:into:)`` for those).
/// Global registration is process-wide: serialize the tests that use it.
///
/// Linux notes: redirects are answered as plain 3xx responses (swift-corelibs-foundation
/// traps on `wasRedirectedTo`), and task-scoped chaos (`Chaos.with`) is not visible while
/// loading, so give each session its own stub set instead.
public class ChaosURLProtocol: URLProtocol {
    private static let registry = Locked<SlotTable>(SlotTable())
    private static let global = Locked<StubSet?>(nil)
    private let loading = Locked<Task<Void, Never>?>(nil)
    /// Held while the client is told the answer, and while ``stopLoading()`` marks the load
    /// stopped; recursive, as a client callback may stop the load on the same thread.
    private let reporting = NSRecursiveLock()
    /// Whether the task has its answer (given, or cancelled by URLSession). Guarded by `reporting`.
    private var answered = false

    /// Routes sessions made from `configuration` through `stubs`.
    public static func install(_ stubs: StubSet, into configuration: URLSessionConfiguration) {
        ChaosNetwork.register()
        let slot = registry.withLock { $0.slot(for: stubs) }
        let protocolClass: AnyClass = slotClass(slot)
        var classes = configuration.protocolClasses ?? []
        classes.removeAll { ($0 as? ChaosURLProtocol.Type) != nil }
        configuration.protocolClasses = [protocolClass] + classes
    }

    /// Frees the slot of `stubs` at once (otherwise it is freed when the set is released):
    /// sessions still using it then fail their requests, saying the set is gone.
    public static func uninstall(_ stubs: StubSet) {
        registry.withLock { $0.remove(stubs) }
    }

    /// Whether `stubs` has a protocol slot (is installed in some configuration).
    public static func isInstalled(_ stubs: StubSet) -> Bool {
        registry.withLock { $0.contains(stubs) }
    }

    /// The slot this class answers for (-1: the global set).
    class var slot: Int { -1 }

    /// Registers the protocol process-wide (for `URLSession.shared`), answering with
    /// `stubs`. Call it before the first URLSession is created; later calls only change the set.
    public static func registerGlobally(_ stubs: StubSet) {
        ChaosNetwork.register()
        let first = global.withLock { current in
            defer { current = stubs }
            return current == nil
        }
        if first { _ = URLProtocol.registerClass(ChaosURLProtocol.self) }
    }

    /// Stops answering requests without a per-session set (requests then go out for real).
    public static func unregisterGlobally() {
        global.withLock { $0 = nil }
        URLProtocol.unregisterClass(ChaosURLProtocol.self)
    }

    static func stubSet(slot: Int) -> StubSet? {
        if slot >= 0 { return registry.withLock { $0.set(at: slot) } }
        return global.withLock { $0 }
    }

    /// Whether this protocol handles `request`: HTTP(S) requests of a session with a stub
    /// set, or any HTTP(S) request while registered globally; never a pass-through.
    public override class func canInit(with request: URLRequest) -> Bool {
        guard let scheme = request.url?.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            return false
        }
        if URLProtocol.property(forKey: PassThroughClient.markKey, in: request) != nil { return false }
        return stubSet(slot: slot) != nil
    }

    /// The request unchanged.
    public override class func canonicalRequest(for request: URLRequest) -> URLRequest {
        request
    }

    /// Answers the request through the point and the stub set.
    public override func startLoading() {
        let urlRequest = request
        guard let stubs = Self.stubSet(slot: Self.slot) else {
            fail(
                NetworkError.transport(
                    "the stub set of this session no longer exists; keep a reference to it while the session is used"),
                url: urlRequest.url)
            return
        }
        guard let marked = urlRequest.httpRequest else {
            fail(
                NetworkError.transport(
                    "\(urlRequest.url?.absoluteString ?? "the request") cannot be expressed as an HTTP request"),
                url: urlRequest.url)
            return
        }
        let body = Self.body(of: urlRequest, task: task)
        let url = urlRequest.url
        // A ChaosNetworkClient's request keeps its record (the client journals it); any
        // other gets one here.
        let (head, outer) = JournalRecord.takeOver(marked)
        let record = outer ?? RequestJournal.shared.start(NetworkRequest(head, body: body), route: .urlSession)
        let finishing = outer == nil ? record : nil
        // A constant stub with no chaos on the point and no conditions: answer here and
        // now, as a plain URLProtocol would, without a task or the async machinery.
        if ChaosNetwork.send.isPassingThrough,
            let prepared = stubs.immediateAnswer(NetworkRequest(head, body: body), record: record)
        {
            record?.reachedTransport()
            finishing?.finish(
                status: prepared.status, bytes: prepared.body.count, error: prepared.interruption)
            deliver(prepared, url: url)
            return
        }
        let transport = StubTransport(stubs: stubs, record: record)
        let this = LoadingProtocol(instance: self)
        let operation: @Sendable () async -> Void = {
            do throws(NetworkError) {
                let response = try await ChaosNetwork.send(NetworkRequest(head, body: body, transport: transport))
                finishing?.finish(.success(response))
                this.instance.deliver(response, url: url)
            } catch {
                finishing?.finish(.failure(error))
                this.instance.fail(error, url: url)
            }
        }
        // A plain task, not `Task.immediate`: running the answer on URLSession's own queue
        // deadlocks swift-corelibs-foundation when it starts another URLSession task
        // (a pass-through) before suspending.
        let task = Task(operation: operation)
        loading.withLock { $0 = task }
    }

    /// Cancels an answer still being prepared (latency, bandwidth). URLSession has then
    /// given the task its answer (a cancellation) itself, so this protocol gives none.
    public override func stopLoading() {
        reporting.withLock { answered = true }
        loading.withLock { $0?.cancel() }
    }

    /// Tells the client `report` unless the task already has its answer: a second answer
    /// (after URLSession cancelled the task) makes swift-corelibs-foundation resume an
    /// async caller's continuation twice, which traps.
    private func answer(_ report: () -> Void) {
        reporting.lock()
        defer { reporting.unlock() }
        guard !answered else { return }
        answered = true
        report()
    }

    private func deliver(_ response: NetworkResponse, url: URL?) {
        deliver(PreparedResponse(response), url: url)
    }

    private func deliver(_ response: PreparedResponse, url: URL?) {
        answer { send(response, url: url) }
    }

    private func fail(_ error: NetworkError, url: URL?) {
        answer { sendFailure(error, url: url) }
    }

    private func send(_ response: PreparedResponse, url: URL?) {
        guard let url,
            let http = HTTPURLResponse(
                url: url, statusCode: response.status, httpVersion: "HTTP/1.1", headerFields: response.headers)
        else {
            sendFailure(.transport("the stubbed response cannot be expressed as an HTTPURLResponse"), url: url)
            return
        }
        if task is URLSessionDownloadTask {
            deliverDownload(response, head: http, url: url)
            return
        }
        client?.urlProtocol(self, didReceive: http, cacheStoragePolicy: .notAllowed)
        if !response.body.isEmpty { client?.urlProtocol(self, didLoad: response.body) }
        if let interruption = response.interruption {
            sendFailure(interruption, url: url)
            return
        }
        client?.urlProtocolDidFinishLoading(self)
    }

    /// A download task's answer: the body in a file at the location URLSession reports.
    ///
    /// Apple's Foundation writes the file from `didLoad` itself. swift-corelibs-foundation
    /// does not: it hands the completion handler (and `download(for:)`) the file its own
    /// protocols record in `URLProtocol.properties`, which is internal, so an answer
    /// through the client alone reaches `download(for:)` without a file, and it traps.
    /// Here the body is written to a temporary file (in ``DownloadFolder``, removed when
    /// the process exits) and its location recorded where Foundation reads it
    /// (``DownloadLocation``); when that cannot be done the task fails
    /// with `URLError.cannotCreateFile`, naming why, instead of crashing.
    private func deliverDownload(_ response: PreparedResponse, head: HTTPURLResponse, url: URL) {
        if let interruption = response.interruption {
            client?.urlProtocol(self, didReceive: head, cacheStoragePolicy: .notAllowed)
            sendFailure(interruption, url: url)
            return
        }
        #if canImport(FoundationNetworking)
        let file = (DownloadFolder.current ?? FileManager.default.temporaryDirectory).appendingPathComponent(
            "ChaosKit-download-\(UUID().uuidString).tmp")
        do {
            try response.body.write(to: file)
        } catch {
            sendFailure(
                .urlError(
                    code: URLError.Code.cannotCreateFile.rawValue,
                    "the downloaded body cannot be written to \(file.path): \(error.localizedDescription)"), url: url)
            return
        }
        guard DownloadLocation.record(file, in: self) else {
            try? FileManager.default.removeItem(at: file)
            sendFailure(
                .urlError(
                    code: URLError.Code.cannotCreateFile.rawValue,
                    "this Foundation gives a URLProtocol no way to hand a download task its file; use a data task (data(for:)) for stubbed downloads"
                ), url: url)
            return
        }
        client?.urlProtocol(self, didReceive: head, cacheStoragePolicy: .notAllowed)
        client?.urlProtocolDidFinishLoading(self)
        #else
        client?.urlProtocol(self, didReceive: head, cacheStoragePolicy: .notAllowed)
        if !response.body.isEmpty { client?.urlProtocol(self, didLoad: response.body) }
        client?.urlProtocolDidFinishLoading(self)
        #endif
    }

    private func sendFailure(_ error: NetworkError, url: URL?) {
        client?.urlProtocol(self, didFailWithError: error.urlError(for: url))
    }

    /// The body of `request`: its data or stream, or for upload tasks (whose request has
    /// neither on swift-corelibs-foundation) the data, file or stream the task was made with.
    static func body(of request: URLRequest, task: URLSessionTask? = nil) -> Data? {
        if let body = request.httpBody { return body }
        if let stream = request.httpBodyStream { return read(stream) }
        #if canImport(FoundationNetworking)
        if let task, task is URLSessionUploadTask { return UploadBody.of(task) }
        #endif
        return nil
    }

    static func read(_ stream: InputStream) -> Data {
        stream.open()
        defer { stream.close() }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = stream.read(&buffer, maxLength: buffer.count)
            if count <= 0 { break }
            data.append(buffer, count: count)
        }
        return data
    }
}

/// A stub set as the point's transport inside a URLSession: unmatched requests pass
/// through a session without the protocol.
struct StubTransport: ResponseProducing {
    let stubs: StubSet
    /// The journal's record of the request, when the journal is on.
    var record: JournalRecord?

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        let response = try await self.response(to: NetworkRequest(request, body: body))
        return (response.head, try response.completeBody())
    }

    func response(to request: NetworkRequest) async throws(NetworkError) -> NetworkResponse {
        record?.reachedTransport()
        return try await stubs.respond(to: request, passThrough: PassThroughClient.shared, record: record)
    }
}

/// A protocol instance handed to the task that answers it. URLProtocol is not Sendable,
/// but its `request` and `client` are set by the loading system before `startLoading` and
/// never change afterwards, the client is made to be called from any thread, and the only
/// mutable state of ``ChaosURLProtocol`` is guarded: the loading task by its mutex, whether
/// the task was answered by its `reporting` lock.
struct LoadingProtocol: @unchecked Sendable {
    let instance: ChaosURLProtocol
}

/// Which stub set each slot class answers for; slots of sets that are gone are reused.
struct SlotTable {
    private struct Entry {
        weak var set: StubSet?
        let identifier: String
    }

    private var entries: [Entry] = []

    mutating func slot(for stubs: StubSet) -> Int {
        if let index = entries.firstIndex(where: { $0.identifier == stubs.identifier && $0.set != nil }) {
            return index
        }
        let entry = Entry(set: stubs, identifier: stubs.identifier)
        if let free = entries.firstIndex(where: { $0.set == nil }) {
            entries[free] = entry
            return free
        }
        entries.append(entry)
        return entries.count - 1
    }

    mutating func remove(_ stubs: StubSet) {
        for index in entries.indices where entries[index].identifier == stubs.identifier {
            entries[index] = Entry(set: nil, identifier: "")
        }
    }

    func contains(_ stubs: StubSet) -> Bool {
        entries.contains { $0.identifier == stubs.identifier && $0.set != nil }
    }

    func set(at slot: Int) -> StubSet? {
        slot < entries.count ? entries[slot].set : nil
    }
}

// MARK: - One protocol class per slot

/// A slot number spelled as a type: `End` is 0, `Bit0<T>` is 2·T, `Bit1<T>` is 2·T + 1.
protocol SlotTag {
    static var index: Int { get }
}

enum End: SlotTag {
    static var index: Int { 0 }
}

enum Bit0<Rest: SlotTag>: SlotTag {
    static var index: Int { Rest.index * 2 }
}

enum Bit1<Rest: SlotTag>: SlotTag {
    static var index: Int { Rest.index * 2 + 1 }
}

/// The protocol class of one slot: a distinct class per slot, made at run time.
final class SlotProtocol<Tag: SlotTag>: ChaosURLProtocol {
    override class var slot: Int { Tag.index }
}

/// The protocol class of `slot`.
func slotClass(_ slot: Int) -> AnyClass {
    func tag(_ value: Int) -> any SlotTag.Type {
        if value == 0 { return End.self }
        let rest = tag(value / 2)
        func extend<T: SlotTag>(_: T.Type) -> any SlotTag.Type { value % 2 == 0 ? Bit0<T>.self : Bit1<T>.self }
        return extend(rest)
    }
    func protocolClass<T: SlotTag>(_: T.Type) -> AnyClass { SlotProtocol<T>.self }
    return protocolClass(tag(slot))
}
