//go:build redisync_noembed

package main

import (
	"errors"

	"github.com/redis/rueidis"
)

// Built with -tags redisync_noembed: no embedded server (see embedded.go),
// so the demo needs a server like every other command.

// embeddedDefault completes the demo's --redis default in --help.
const embeddedDefault = "none (this build has no embedded Redis: -tags redisync_noembed)"

func connectEmbedded() (rueidis.Client, string, func(), error) {
	return nil, "", nil, errors.New("no --redis or $" + envURL + " given, and this build has no embedded Redis (built with -tags redisync_noembed)")
}
