package keys

// LatchChannelPrefix starts Redisson's RCountDownLatch channel. Unlike the
// lock channels, Redisson does not apply its "contains '{'" rule here: the
// channel is always prefix + "{" + name + "}" (Redisson 4.7.0,
// RedissonCountDownLatch.getChannelName), so that is what both libraries
// must use to hear each other.
const LatchChannelPrefix = "redisson_countdownlatch__channel__"

// LatchChannel returns Redisson's countdown latch channel for name, and
// whether it hashes to name's slot. It does when name contains no '}': the
// channel's tag is then the whole name, and such a name has no tag of its
// own ("a{b" included). A name with a '}' gives the channel the tag "name
// up to its first '}'" ("{t}x" gives "{t"), in another slot but by chance.
// On a single server that costs nothing; on a Redis Cluster the latch
// scripts, which name the key and the channel, would be refused
// (CROSSSLOT), as Redisson's own are.
func LatchChannel(name string) (channel string, ok bool) {
	channel = LatchChannelPrefix + "{" + name + "}"
	return channel, Slot(channel) == Slot(name)
}
