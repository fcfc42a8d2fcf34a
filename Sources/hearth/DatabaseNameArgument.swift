import ArgumentParser
import HearthClient

/// The `NAME` argument of `hearth db create|info|delete`, checked against the naming rule.
struct DatabaseNameArgument: ParsableArguments {
    @Argument(help: "The database's name.") var name: String

    func validate() throws {
        do { try Database.validateDatabaseName(name) } catch { throw ValidationError(error.message) }
    }
}
