import HubServer
import Testing
import Yams

@Suite struct OpenAPIDocumentTests {
    @Test func documentListsExactlyTheRoutes() throws {
        let document = try #require(try Yams.load(yaml: OpenAPIDocument.yaml) as? [String: Any])
        #expect(document["openapi"] as? String == "3.1.0")
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        var documented: Set<String> = []
        for (path, item) in paths {
            for method in ["get", "put", "post", "patch", "delete"] where item[method] != nil {
                documented.insert("\(method.uppercased()) \(path)")
            }
        }
        #expect(documented == Set(HubAPI.routes))
    }
}
