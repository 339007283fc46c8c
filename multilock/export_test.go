package multilock

// ServerAddrForExamples is the server the Examples use (set by TestMain).
func ServerAddrForExamples() string { return exampleAddr }
