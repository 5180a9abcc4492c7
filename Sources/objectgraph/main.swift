import ObjectGraph
@main struct Main { static func main() {} }
