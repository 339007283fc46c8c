// Package keyspace holds no code: its tests check, against a real
// redis-server shared by the whole package, that the primitives keep to
// their own keys — distinct names never share a key, kinds on one name
// exclude each other or refuse, a user's data under any key the library
// derives is never written, and a script denied one command leaves nothing
// behind (issue 13). FuzzKeyspace drives two names of two kinds, with owner
// ids and a holder label of its choosing (issue 22: every user string that
// lands in Redis), through lock, unlock, force-unlock and inspect over a
// user's data key of every type. FuzzKeyspace and the ACL matrix run on
// Clients with holder info and on Clients without, whose scripts take
// their common paths (a free name, the release of a hold's last count).
package keyspace
