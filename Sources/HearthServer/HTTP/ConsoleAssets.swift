/// The web console (docs/console.md): HTML, CSS and JavaScript kept as files in
/// `Sources/HearthServer/Console/` and compiled into the binary by SwiftPM (`embedInCode`), so
/// hearthd serves it with nothing to install. `GET /` is the page, `GET /console/<file>` the rest,
/// `GET /favicon.ico` the icon.
enum ConsoleAssets {
    struct Asset {
        let bytes: [UInt8]
        let contentType: String
    }

    /// The page itself, served at `/`.
    static let indexName = "index.html"
    /// The icon, served at `/favicon.ico` too, where browsers look for it unasked.
    static let faviconName = "favicon.svg"

    /// The asset named `name` (a file name, no directories), or nil.
    static func asset(named name: String) -> Asset? {
        switch name {
        case "index.html": return Asset(bytes: PackageResources.index_html, contentType: "text/html; charset=utf-8")
        case "console.css": return Asset(bytes: PackageResources.console_css, contentType: "text/css; charset=utf-8")
        case "console.js":
            return Asset(bytes: PackageResources.console_js, contentType: "text/javascript; charset=utf-8")
        case faviconName: return Asset(bytes: PackageResources.favicon_svg, contentType: "image/svg+xml")
        default: return nil
        }
    }
}
