// Package scripts holds every Lua script of redisync as a .lua file, embedded,
// with one typed Go wrapper per script. The rules every script follows (reads
// and checks before it writes, server time, every key in KEYS) are the doc of
// the public package github.com/redisync/redisync/scripts, which exports
// nothing else.
package scripts
