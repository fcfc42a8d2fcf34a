extension String {
    /// Whether both strings hold the same UTF-8 bytes. Unlike `==` this never merges canonically
    /// equivalent strings, and for native strings it compares contiguous bytes, far faster than
    /// `utf8.elementsEqual`.
    @inlinable public func utf8Equals(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        var a = self
        var b = other
        return a.withUTF8 { x in b.withUTF8 { y in x.elementsEqual(y) } }
    }
}
