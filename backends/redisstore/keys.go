package redisstore

import (
	"strconv"
	"strings"
	"sync"
)

// slotCount is the number of hash slots of Redis Cluster.
const slotCount = 16384

// keyset names the Redis keys and the pub/sub channel of one idempotency key.
// All three carry the same hash slot, so every script touches one slot.
type keyset struct {
	slot    uint16 // hash slot of all three
	record  string // prefix:{tag}        the record hash
	fence   string // prefix:fence:{T}    the fencing counter of the slot
	channel string // prefix:chan:{tag}   completion notifications
}

// keysFor returns the Redis names for key under prefix.
func keysFor(prefix, key string) keyset {
	tag := escapeTag(key)
	slot := keySlot(tag)
	return keyset{
		slot:    slot,
		record:  prefix + ":{" + tag + "}",
		fence:   prefix + ":fence:{" + slotTag(slot) + "}",
		channel: prefix + ":chan:{" + tag + "}",
	}
}

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
