import HearthCore
import HearthJSON
import XCTest

@testable import HearthClient

/// The client's error codes are the server's (`DatabaseError.Code`) plus its own, and cannot drift
/// from the server's (docs/client.md "Errors").
final class ErrorCodeTests: XCTestCase {
    /// The client's name for each server code. The switch is exhaustive, so a code added to the
    /// server does not compile here until `HearthError.Code` names it.
    private func clientName(_ code: DatabaseError.Code) -> HearthError.Code {
        switch code {
        case .badRequest: return .badRequest
        case .unknownOp: return .unknownOp
        case .invalidPath: return .invalidPath
        case .invalidKey: return .invalidKey
        case .invalidValue: return .invalidValue
        case .invalidQuery: return .invalidQuery
        case .tooLarge: return .tooLarge
        case .tooDeep: return .tooDeep
        case .permissionDenied: return .permissionDenied
        case .invalidToken: return .invalidToken
        case .indexNotDefined: return .indexNotDefined
        case .notFound: return .notFound
        case .overloaded: return .overloaded
        case .slowConsumer: return .slowConsumer
        case .unavailable: return .unavailable
        case .internal: return .internal
        case .invalidRules: return .invalidRules
        case .unauthenticated: return .unauthenticated
        case .writeIDExpired: return .writeIDExpired
        case .diverged: return .diverged
        case .quotaExceeded: return .quotaExceeded
        }
    }

    func testEveryServerCodeDecodesToTheSameCodeOnTheClient() {
        for code in DatabaseError.Code.allCases {
            let wire = JSONValue.object(["code": .string(code.rawValue), "message": .string("m")])
            let decoded = HearthError(wire: wire)
            XCTAssertEqual(decoded.code, .server(code), code.rawValue)
            XCTAssertEqual(decoded.code, clientName(code), code.rawValue)
            XCTAssertEqual(decoded.code.rawValue, code.rawValue)
            XCTAssertEqual(decoded.message, "m")
            XCTAssertEqual(HearthError(DatabaseError(code, "m")).code, clientName(code), code.rawValue)
            XCTAssertEqual(HearthError.Code(rawValue: code.rawValue), .server(code))
        }
    }

    func testClientCodesAreNoServerCodes() {
        for code in HearthError.ClientCode.allCases {
            XCTAssertNil(DatabaseError.Code(rawValue: code.rawValue), code.rawValue)
            XCTAssertEqual(HearthError.Code(rawValue: code.rawValue), .client(code))
        }
        let all = HearthError.Code.allCases
        XCTAssertEqual(all.count, DatabaseError.Code.allCases.count + HearthError.ClientCode.allCases.count)
        XCTAssertEqual(Set(all.map(\.rawValue)).count, all.count)
    }

    func testAnUnknownWireCodeIsInternal() {
        let wire = JSONValue.object(["code": .string("no_such_code"), "message": .string("m")])
        XCTAssertEqual(HearthError(wire: wire).code, .internal)
        XCTAssertEqual(HearthError(wire: .null).code, .internal)
    }

    func testCodesPrintByName() {
        XCTAssertEqual("\(HearthError.Code.permissionDenied)", "permissionDenied")
        XCTAssertEqual("\(HearthError.Code.connectionRefused)", "connectionRefused")
        XCTAssertEqual(HearthError(.writeIDExpired, "gone").description, "write_id_expired: gone")
    }
}
