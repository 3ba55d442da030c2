import ChaosHooks
import ChaosKit
import ChaosNetwork
import ChaosPoints
import Foundation

/// The points this tool knows by name. Swift's static points are created lazily, on first
/// use; touching them here makes them visible to `validate` and `list`.
enum BuiltInPoints {
    static func register() {
        _ = (DemoApp.greeting, DemoApp.today, DemoApp.fetchScore)
        Chaos.registerBuiltInPoints()
        SystemPoints.register()
        ChaosNetwork.register()
    }
}

enum FileHandleWriter {
    static func writeToStandardError(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}
