#if canImport(Glibc)
import Glibc
#endif

/// Gives memory that the allocator kept after a burst of writes back to the system.
///
/// Allocators keep freed memory (request buffers decoded on the I/O threads, tree paths replaced
/// by writes) for reuse: glibc's malloc rarely returns it, and jemalloc (the allocator the Docker
/// image preloads, README.md "Allocator") only as later allocations let it decay, which an idle
/// server never makes. So after a large import the resident size stays well above what the data
/// needs. Every half second (on the engine's loop), when at least `minimumWrites` write requests
/// were applied since the last trim, none since the last tick, and the last trim is
/// `minimumInterval` old, this releases the free memory there (`releaseFreeMemory`): a few
/// milliseconds on a heap of a few hundred MiB, once the writes have paused.
final class MemoryTrimmer: @unchecked Sendable {
    // `lastWrites`, `trimmedAtWrites` and `trimmedAt` are only touched on the engine's loop.
    private var lastWrites = 0
    private var trimmedAtWrites = 0
    private var trimmedAt: ContinuousClock.Instant?
    private let minimumWrites: Int
    private let minimumInterval: Duration
    private let trim: (@convention(c) (Int) -> Int32)?

    /// `trim` stands in for the allocator's release (tests); by default `releaseFreeMemory`.
    init(
        minimumWrites: Int = 100, minimumInterval: Duration = .seconds(10),
        trim: (@convention(c) (Int) -> Int32)? = MemoryTrimmer.releaseFreeMemory
    ) {
        self.minimumWrites = minimumWrites
        self.minimumInterval = minimumInterval
        self.trim = trim
    }

    /// How this process's allocator gives its free memory back, looked up at run time: jemalloc's
    /// purge of every arena when jemalloc is the allocator (it then provides `mallctl`), else
    /// glibc's `malloc_trim`; nil when neither is there.
    static var releaseFreeMemory: (@convention(c) (Int) -> Int32)? {
        if Allocator.current == .jemalloc {
            return { _ in
                // MALLCTL_ARENAS_ALL (4096): every arena's unused dirty and muzzy pages.
                jemallocControl?("arena.4096.purge", nil, nil, nil, 0) ?? -1
            }
        }
        return mallocTrim
    }

    /// glibc's `malloc_trim`, looked up at run time (nil elsewhere).
    static var mallocTrim: (@convention(c) (Int) -> Int32)? {
        #if canImport(Glibc)
        return dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim").map {
            unsafeBitCast($0, to: (@convention(c) (Int) -> Int32).self)
        }
        #else
        return nil
        #endif
    }

    /// Fixes glibc's thresholds for returning memory (`mallopt`): blocks of 1 MiB and more are
    /// mapped on their own and unmapped when freed, and an arena gives back its free top once it
    /// passes 1 MiB. By default both thresholds grow with the largest block freed so far (up to
    /// 32 MiB and 64 MiB), and an I/O thread's arena that once held a burst of decoded requests
    /// then keeps that memory resident for good: after a million-leaf import, 16 MiB that
    /// `malloc_trim` cannot return (it trims the free blocks inside a thread's arena, not its top).
    /// Once per process; does nothing without glibc (and nothing that matters under jemalloc, which
    /// then allocates instead of glibc's malloc).
    static let fixAllocatorThresholds: Void = {
        #if canImport(Glibc)
        typealias MallOpt = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        let mallopt = unsafeBitCast(symbol, to: MallOpt.self)
        let trimThreshold: Int32 = -1  // M_TRIM_THRESHOLD
        let mmapThreshold: Int32 = -3  // M_MMAP_THRESHOLD
        _ = mallopt(mmapThreshold, 1 << 20)
        _ = mallopt(trimThreshold, 1 << 20)
        #endif
    }()

    /// Called every half second with the number of writes (requests) applied so far.
    func tick(writes: Int) {
        defer { lastWrites = writes }
        guard let trim, writes == lastWrites, writes - trimmedAtWrites >= minimumWrites else { return }
        let now = ContinuousClock.now
        if let trimmedAt, now - trimmedAt < minimumInterval { return }
        trimmedAtWrites = writes
        trimmedAt = now
        _ = trim(0)
    }
}
