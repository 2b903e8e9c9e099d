package redisstore

import (
	"strconv"
	"strings"
	"sync"
)

// slotCount is the number of hash slots of Redis Cluster.
const slotCount = 16384

// keyset names the Redis keys and the pub/sub channel of one idempotency
// key. All of them carry the same hash slot, so every script touches one
// slot. Only the record name is built eagerly; the others are built when a
// call needs them.
type keyset struct {
	prefix string
	slot   uint16 // hash slot of all the names
	record string // prefix:{tag}, the record hash
}

// keysFor returns the Redis names for key under prefix.
func keysFor(prefix, key string) keyset {
	tag := escapeTag(key)
	return keyset{prefix: prefix, slot: keySlot(tag), record: prefix + ":{" + tag + "}"}
}

// fence is the fencing counter of the slot: prefix:fence:{T}.
func (k keyset) fence() string { return k.prefix + ":fence:{" + slotTag(k.slot) + "}" }

// channel is the notification channel: prefix:{tag}:chan. Its hash tag is
// the record's, and the scripts derive it from KEYS[1] the same way.
func (k keyset) channel() string { return k.record + channelSuffix }

// channelSuffix turns a record name into its channel name.
const channelSuffix = ":chan"

// escapeTag makes key usable as the content of a hash tag: '%', '{' and '}'
// become %25, %7B and %7D. The mapping is injective, so distinct keys get
// distinct record keys, and the result never contains a brace, so Redis
// reads the whole of it as the tag.
func escapeTag(key string) string {
	if !strings.ContainsAny(key, "%{}") {
		return key
	}
	var b strings.Builder
	b.Grow(len(key) + 8)
	for i := 0; i < len(key); i++ {
		switch c := key[i]; c {
		case '%':
			b.WriteString("%25")
		case '{':
			b.WriteString("%7B")
		case '}':
			b.WriteString("%7D")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the checksum
// Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// keySlot returns the Redis Cluster hash slot of a hash tag's content.
func keySlot(tag string) uint16 { return crc16(tag) % slotCount }

// slotTags maps every hash slot to the shortest decimal string (smallest
// number first) that hashes to it. The table is a pure function of the
// CRC, so every process computes the same one; changing the rule would
// rename the fencing counters and break token monotonicity.
var slotTags = sync.OnceValue(func() *[slotCount]string {
	var t [slotCount]string
	left := slotCount
	for n := uint64(0); left > 0; n++ {
		s := strconv.FormatUint(n, 10)
		if slot := keySlot(s); t[slot] == "" {
			t[slot] = s
			left--
		}
	}
	return &t
})

// slotTag returns the counter tag of slot.
func slotTag(slot uint16) string { return slotTags()[slot] }
