import ArgumentParser

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The exit status of a bad setting, from whatever source (a flag, the environment, the
/// configuration file, the rules file): 64, as for a value the argument parser itself rejects
/// (`EX_USAGE`). Every other failure to start exits with status 1.
let badSettingStatus: Int32 = 64

/// Reports a bad setting on stderr in the argument parser's style (`Error: …`) and returns the
/// exit code to throw.
func badSetting(_ message: String) -> ExitCode {
    let bytes = Array("Error: \(message)\n".utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    return ExitCode(badSettingStatus)
}
