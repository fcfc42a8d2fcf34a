#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension String {
    /// Whether both strings hold the same UTF-8 bytes. Unlike `==` this never merges canonically
    /// equivalent strings, and for native strings it compares contiguous bytes, far faster than
    /// `utf8.elementsEqual`.
    @inlinable public func utf8Equals(_ other: String) -> Bool {
        // O(1) for native strings, and most unequal keys differ in length.
        guard utf8.count == other.utf8.count else { return false }
        let contiguous = utf8.withContiguousStorageIfAvailable { x in
            other.utf8.withContiguousStorageIfAvailable { y in
                x.count == y.count && (x.count == 0 || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0)
            }
        }
        if let contiguous, let equal = contiguous { return equal }
        return utf8.elementsEqual(other.utf8)
    }

    /// Whether the string's UTF-8 is exactly `bytes`.
    @inlinable public func utf8Equals(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let contiguous = utf8.withContiguousStorageIfAvailable { x in
            guard x.count == bytes.count else { return false }
            guard let a = x.baseAddress, let b = bytes.baseAddress else { return true }
            return memcmp(a, b, x.count) == 0
        }
        return contiguous ?? utf8.elementsEqual(bytes)
    }
}
