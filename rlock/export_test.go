package rlock

// RlockExampleAddr exposes the shared server's address to the external
// Example package.
func RlockExampleAddr() string { return exampleAddr }
