import HearthAuth
import HearthCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// The keys of `jwtPublicKeysURL` (docs/security.md, "Firebase Auth"): fetched once at start (a
/// failure stops the start, naming the URL), then again in the background when the answer's
/// `Cache-Control: max-age` runs out, at least every hour. A failed refresh is logged and the keys
/// in use stay. A token naming a `kid` that no key has asks for one early refresh, at most one a
/// minute.
final class JWKSRefresher: Sendable {
    /// The largest JWKS document accepted.
    static let maxDocumentBytes = 1 << 20
    /// How long one fetch may take, connecting included.
    static let fetchTimeout = TimeAmount.seconds(10)
    /// The longest wait between two refreshes, whatever `max-age` says.
    static let longestInterval = Duration.seconds(3600)
    /// The shortest wait between two scheduled refreshes, whatever `max-age` says.
    static let shortestInterval = Duration.seconds(5)
    /// The longest wait before trying again after a refresh failed.
    static let retryAfterFailure = Duration.seconds(60)
    /// Early refreshes (for an unknown `kid`) are at least this far apart.
    static let earlyRefreshSpacing = Duration.seconds(60)

    let url: KeysURL
    private let tls: NIOSSLContext?
    private let logger: Logger
    /// Puts freshly fetched keys in force.
    private let apply: @Sendable (FetchedKeys, @escaping @Sendable () -> Void) -> Void
    private let state = NIOLockedValueBox(State())

    private struct State {
        /// When the last early refresh started.
        var lastEarlyRefresh: ContinuousClock.Instant?
        /// Fetches started, and the latest of them whose keys are in force: a slower, older
        /// fetch never replaces a newer one's keys.
        var started = 0
        var applied = 0
        var loop: Task<Void, Never>?
        var stopped = false
    }

    private init(
        url: KeysURL, tls: NIOSSLContext?, logger: Logger,
        apply: @escaping @Sendable (FetchedKeys, @escaping @Sendable () -> Void) -> Void
    ) {
        self.url = url
        self.tls = tls
        self.logger = logger
        self.apply = apply
    }

    /// Fetches the keys of `settings.jwtPublicKeysURL` into `security`'s verifier and keeps them
    /// fresh until `stop`; nil when no URL is configured.
    static func start(
        _ settings: TokenVerifier.Settings, security: SecurityState, logger: Logger
    ) async throws(ConfigurationError) -> JWKSRefresher? {
        guard let text = settings.jwtPublicKeysURL else { return nil }
        let url = try KeysURL(text, source: "jwtPublicKeysURL")
        let tls = url.secure ? try tlsContext(caFile: settings.jwtPublicKeysCAFile, for: url) : nil
        let refresher = JWKSRefresher(url: url, tls: tls, logger: logger) { [weak security] keys, onUnknownKid in
            security?.replaceFetchedKeys(keys, onUnknownKid: onUnknownKid)
        }
        let next: Duration
        do {
            next = try await refresher.refresh()
        } catch {
            throw ConfigurationError("jwtPublicKeysURL: could not fetch the JWT keys from \(text): \(error)")
        }
        refresher.startLoop(firstWait: next)
        return refresher
    }

    /// Ends the background refreshes.
    func stop() {
        let loop = state.withLockedValue { state in
            state.stopped = true
            return state.loop
        }
        loop?.cancel()
    }

    /// A token named a `kid` that no key has: fetches the keys now unless an early refresh
    /// started less than a minute ago. Returns at once (called on a connection's thread).
    func requestEarlyRefresh() {
        let now = ContinuousClock.now
        let go = state.withLockedValue { state -> Bool in
            guard !state.stopped else { return false }
            if let last = state.lastEarlyRefresh, now - last < Self.earlyRefreshSpacing { return false }
            state.lastEarlyRefresh = now
            return true
        }
        guard go else { return }
        logger.notice(
            "a token names a key id (kid) the fetched JWT keys lack: fetching them now",
            metadata: ["url": "\(url.text)"])
        Task { [weak self] in
            guard let self else { return }
            do {
                _ = try await self.refresh()
            } catch {
                self.logger.warning(
                    "could not fetch the JWT keys; the keys in use stay",
                    metadata: ["url": "\(self.url.text)", "error": "\(error)"])
            }
        }
    }

    private func startLoop(firstWait: Duration) {
        let task = Task { [weak self] in
            var wait = firstWait
            while !Task.isCancelled {
                do { try await Task.sleep(for: wait) } catch { return }
                guard let self else { return }
                do {
                    wait = try await self.refresh()
                } catch {
                    wait = min(wait, Self.retryAfterFailure)
                    self.logger.warning(
                        "could not refresh the JWT keys; the keys in use stay",
                        metadata: [
                            "url": "\(self.url.text)", "error": "\(error)",
                            "retryInSeconds": "\(wait.components.seconds)",
                        ])
                }
            }
        }
        let stopped = state.withLockedValue { state in
            state.loop = task
            return state.stopped
        }
        if stopped { task.cancel() }
    }

    /// Fetches and parses the document, puts its keys in force, and returns when to refresh next.
    private func refresh() async throws -> Duration {
        let ticket = state.withLockedValue { state in
            state.started += 1
            return state.started
        }
        let response = try await HTTPRequester.send(
            HTTPRequester.Request(url: url, headers: [("Accept", "application/json")]), tls: tls,
            group: MultiThreadedEventLoopGroup.singleton, timeout: Self.fetchTimeout, maxBytes: Self.maxDocumentBytes)
        guard response.status == 200 else {
            throw HTTPRequester.Failure("the server answered HTTP \(response.status)")
        }
        let keys: FetchedKeys
        do {
            keys = try await FetchedKeys.parse(jwks: String(decoding: response.body, as: UTF8.self), source: url.text)
        } catch {
            throw HTTPRequester.Failure(error.message)
        }
        let current = state.withLockedValue { state -> Bool in
            guard ticket > state.applied, !state.stopped else { return false }
            state.applied = ticket
            return true
        }
        if current { apply(keys) { [weak self] in self?.requestEarlyRefresh() } }
        let next = Self.interval(cacheControl: response.headers["Cache-Control"])
        logger.info(
            "fetched the JWT keys",
            metadata: [
                "url": "\(url.text)", "kids": "\(keys.kids.joined(separator: ","))",
                "refreshInSeconds": "\(next.components.seconds)",
            ])
        return next
    }

    /// How long an answer may be kept: the `max-age` of its `Cache-Control` headers within the
    /// shortest and longest intervals; the longest when they say nothing.
    static func interval(cacheControl: [String]) -> Duration {
        for value in cacheControl {
            for directive in value.split(separator: ",") {
                let text = directive.drop { $0 == " " || $0 == "\t" }.lowercased()
                let digits = text.dropFirst(8).prefix { $0.isASCII && $0.isNumber }
                guard text.hasPrefix("max-age="), let seconds = Int64(digits) else { continue }
                return min(max(.seconds(seconds), shortestInterval), longestInterval)
            }
        }
        return longestInterval
    }

    /// Full certificate verification against the system's trust roots, or `caFile`'s.
    private static func tlsContext(caFile: String?, for url: KeysURL) throws(ConfigurationError) -> NIOSSLContext {
        do {
            return try HTTPRequester.tlsContext(caFile: caFile)
        } catch {
            let authorities = caFile.map { "jwtPublicKeysCAFile \($0)" } ?? "the system's certificate authorities"
            throw ConfigurationError("jwtPublicKeysURL \(url.text): cannot use \(authorities): \(error)")
        }
    }
}

/// `jwtPublicKeysURL`'s URL.
typealias KeysURL = HTTPURL

/// The Firebase Auth settings' checks.
enum FirebaseAuthSettings {
    /// A Firebase project id: lowercase letters, digits and hyphens.
    static func projectId(_ text: String, _ source: String) throws(ConfigurationError) -> String {
        guard !text.isEmpty, text.utf8.count <= 64,
            text.utf8.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D })
        else {
            throw ConfigurationError(
                "\(source): \"firebaseProjectId\" must be a Firebase project id (lowercase letters, digits and hyphens), not \"\(text)\""
            )
        }
        return text
    }
}
