/// A compiled regular expression of the subset of docs/rules.md ("Regular expressions"), matched by simulating its
/// Thompson NFA (a Pike VM without captures): time O(pattern × input), never backtracking.
/// `matches` has search semantics: true iff the pattern matches somewhere in the string.
struct RuleRegex: Sendable {
    enum Instruction: Sendable {
        case char(UInt32)
        case any
        case set(Int)
        case split(Int, Int)
        case jump(Int)
        case begin
        case end
        case match
    }

    let program: [Instruction]
    let sets: [RegexCharSet]
    let caseInsensitive: Bool
    /// The pattern starts with `^`: threads start only at the beginning.
    let anchored: Bool

    /// The largest program accepted after expanding counted repetitions.
    static let maxInstructions = 20_000

    init(_ pattern: String, caseInsensitive: Bool, maxLength: Int) throws(RegexError) {
        var parser = RegexParser(pattern)
        guard parser.length <= maxLength else {
            throw RegexError(
                message: "regular expression is longer than \(maxLength) characters", offset: 0)
        }
        let tree = try parser.parse()
        var builder = Builder(caseInsensitive: caseInsensitive)
        try builder.emit(tree)
        builder.program.append(.match)
        program = builder.program
        sets = builder.sets
        self.caseInsensitive = caseInsensitive
        if case .begin? = builder.program.first { anchored = true } else { anchored = false }
    }

    private struct Builder {
        let caseInsensitive: Bool
        var program: [Instruction] = []
        var sets: [RegexCharSet] = []

        mutating func append(_ instruction: Instruction) throws(RegexError) {
            guard program.count < RuleRegex.maxInstructions else {
                throw RegexError(
                    message: "regular expression is too large once its repetitions are expanded", offset: 0)
            }
            program.append(instruction)
        }

        mutating func emit(_ node: RegexNode) throws(RegexError) {
            switch node {
            case .char(let c): try append(.char(caseInsensitive ? caseFolded(c, upper: false) : c))
            case .any: try append(.any)
            case .set(let set):
                sets.append(set)
                try append(.set(sets.count - 1))
            case .begin: try append(.begin)
            case .end: try append(.end)
            case .concat(let items):
                for item in items { try emit(item) }
            case .alternation(let branches):
                var jumps: [Int] = []
                for (i, branch) in branches.enumerated() {
                    if i < branches.count - 1 {
                        let split = program.count
                        try append(.split(split + 1, 0))
                        try emit(branch)
                        jumps.append(program.count)
                        try append(.jump(0))
                        program[split] = .split(split + 1, program.count)
                    } else {
                        try emit(branch)
                    }
                }
                for jump in jumps { program[jump] = .jump(program.count) }
            case .repetition(let body, let min, let max):
                for _ in 0..<min { try emit(body) }
                if let max {
                    var splits: [Int] = []
                    for _ in min..<max {
                        splits.append(program.count)
                        try append(.split(program.count + 1, 0))
                        try emit(body)
                    }
                    for split in splits { program[split] = .split(split + 1, program.count) }
                } else {
                    let loop = program.count
                    try append(.split(loop + 1, 0))
                    try emit(body)
                    try append(.jump(loop))
                    program[loop] = .split(loop + 1, program.count)
                }
            }
        }
    }

    /// Whether the pattern matches somewhere in `text`.
    func matches(_ text: String) -> Bool {
        let n = program.count
        // Two thread lists (dense + sparse each) and the closure stack, which never holds more
        // than 2n + 1 entries (each instruction pushes at most two once it is marked). Small
        // programs get their scratch space on the stack.
        return withUnsafeTemporaryAllocation(of: Int.self, capacity: 6 * n + 1) { buffer in
            // Only the sparse halves are read before written; Int is trivial, so the dense halves
            // and the stack may start uninitialized.
            UnsafeMutableBufferPointer(rebasing: buffer[n..<2 * n]).initialize(repeating: 0)
            UnsafeMutableBufferPointer(rebasing: buffer[3 * n..<4 * n]).initialize(repeating: 0)
            var current = ThreadList(UnsafeMutableBufferPointer(rebasing: buffer[0..<2 * n]))
            var next = ThreadList(UnsafeMutableBufferPointer(rebasing: buffer[2 * n..<4 * n]))
            var stack = Stack(UnsafeMutableBufferPointer(rebasing: buffer[4 * n..<buffer.count]))
            return run(text, &current, &next, &stack)
        }
    }

    private func run(
        _ text: String, _ current: inout ThreadList, _ next: inout ThreadList, _ stack: inout Stack
    ) -> Bool {
        let scalars = text.unicodeScalars
        var position = scalars.startIndex
        let end = scalars.endIndex
        if addThread(0, to: &current, atStart: true, atEnd: position == end, stack: &stack) { return true }
        while position != end {
            let value = scalars[position].value
            let folded = caseInsensitive ? caseFolded(value, upper: false) : value
            position = scalars.index(after: position)
            let atEnd = position == end
            next.clear()
            for i in 0..<current.count {
                let pc = current.dense[i]
                let advances: Bool
                switch program[pc] {
                case .char(let c): advances = c == folded
                case .any: advances = true
                case .set(let s): advances = sets[s].contains(value, ignoringCase: caseInsensitive)
                default: advances = false
                }
                if advances, addThread(pc + 1, to: &next, atStart: false, atEnd: atEnd, stack: &stack) {
                    return true
                }
            }
            if !anchored, addThread(0, to: &next, atStart: false, atEnd: atEnd, stack: &stack) { return true }
            if next.count == 0 { return false }
            swap(&current, &next)
        }
        return false
    }

    /// Adds the thread at `pc` and everything reachable by empty moves; true when one reaches
    /// `match`.
    private func addThread(
        _ pc: Int, to list: inout ThreadList, atStart: Bool, atEnd: Bool, stack: inout Stack
    ) -> Bool {
        stack.push(pc)
        while let pc = stack.pop() {
            guard list.insert(pc) else { continue }
            switch program[pc] {
            case .match:
                stack.clear()
                return true
            case .jump(let target): stack.push(target)
            case .split(let a, let b):
                stack.push(b)
                stack.push(a)
            case .begin: if atStart { stack.push(pc + 1) }
            case .end: if atEnd { stack.push(pc + 1) }
            case .char, .any, .set: continue
            }
        }
        return false
    }
}

/// A sparse set of program counters over caller-provided memory: O(1) insert, membership and
/// clear.
private struct ThreadList {
    let dense: UnsafeMutableBufferPointer<Int>
    let sparse: UnsafeMutableBufferPointer<Int>
    var count = 0

    /// `memory` holds 2n initialized integers for a program of n instructions.
    init(_ memory: UnsafeMutableBufferPointer<Int>) {
        let half = memory.count / 2
        dense = UnsafeMutableBufferPointer(rebasing: memory[0..<half])
        sparse = UnsafeMutableBufferPointer(rebasing: memory[half..<memory.count])
    }

    /// Inserts `pc`; false when it was already present.
    mutating func insert(_ pc: Int) -> Bool {
        let slot = sparse[pc]
        if slot < count, dense[slot] == pc { return false }
        sparse[pc] = count
        dense[count] = pc
        count += 1
        return true
    }

    mutating func clear() { count = 0 }
}

/// A fixed-capacity stack over caller-provided memory.
private struct Stack {
    let memory: UnsafeMutableBufferPointer<Int>
    var count = 0

    init(_ memory: UnsafeMutableBufferPointer<Int>) { self.memory = memory }

    mutating func push(_ value: Int) {
        memory[count] = value
        count += 1
    }

    mutating func pop() -> Int? {
        guard count > 0 else { return nil }
        count -= 1
        return memory[count]
    }

    mutating func clear() { count = 0 }
}
