#if canImport(Glibc)
import Glibc
#endif

/// The allocator this process runs on, found at run time: jemalloc when it is preloaded or
/// linked (README.md "Allocator"; the Docker image preloads it), else the C library's malloc.
///
/// Where memory is freed matters differently to the two:
/// glibc's malloc frees a block allocated by another thread under that thread's arena's lock,
/// so hearthd there avoids handing the engine's thread memory to free (`PathMemo` shares a
/// connection's last path); jemalloc frees it without a lock, and there the cost to avoid is
/// two threads changing one object's reference count, which moves its cache line between the
/// cores (`PathMemo` hands out copies).
enum Allocator {
    case jemalloc
    case systemMalloc

    static let current: Allocator = jemallocControl == nil ? .systemMalloc : .jemalloc

    /// Whether a block is about as cheap to free on another thread as on the one that
    /// allocated it.
    static var freesAcrossThreadsCheaply: Bool { current == .jemalloc }
}

/// jemalloc's `mallctl(name, oldp, oldlenp, newp, newlen)`.
typealias JemallocControl =
    @convention(c) (
        UnsafePointer<CChar>?, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int>?, UnsafeMutableRawPointer?, Int
    ) -> Int32

/// jemalloc's `mallctl` when jemalloc is this process's allocator (preloaded or linked), else nil.
let jemallocControl: JemallocControl? = {
    #if canImport(Glibc)
    dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallctl").map { unsafeBitCast($0, to: JemallocControl.self) }
    #else
    nil
    #endif
}()
