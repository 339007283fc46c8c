package ratelimit

import "github.com/redisync/redisync/internal/scripts"

// OnReserve makes l tell f of each reservation Wait makes (its server
// decision: delay, end, generation).
func (l *Limiter) OnReserve(f func(key string, d scripts.RateDecision)) { l.reserved = f }
