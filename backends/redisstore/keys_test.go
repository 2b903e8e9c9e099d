package redisstore

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestCRC16(t *testing.T) {
	// Reference values: the CRC-16/XMODEM check value and CLUSTER KEYSLOT
	// results from the Redis Cluster specification.
	if got := crc16("123456789"); got != 0x31c3 {
		t.Fatalf("crc16 check value %#x, want 0x31c3", got)
	}
	for key, slot := range map[string]uint16{"foo": 12182, "bar": 5061, "hello": 866, "": 0} {
		if got := keySlot(key); got != slot {
			t.Errorf("keySlot(%q) = %d, want %d", key, got, slot)
		}
	}
}

func TestSlotTags(t *testing.T) {
	tags := slotTags()
	for slot, tag := range tags {
		if tag == "" || keySlot(tag) != uint16(slot) {
			t.Fatalf("slot %d: tag %q hashes to %d", slot, tag, keySlot(tag))
		}
	}
	// The table names the fencing counters of every deployment: it must
	// never change, or tokens would restart. This digest pins it.
	sum := sha256.Sum256([]byte(strings.Join(tags[:], ",")))
	const want = "1502e2ec8c9525fca613a80c47af160c9cfca80030dc2a66ab1e0d34b76e6730"
	if got := hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("slot tag table changed: digest %s, want %s", got, want)
	}
}

func TestKeysFor(t *testing.T) {
	for _, key := range []string{"k", "{", "}", "a{b}c", "%7B", "%", "order-42"} {
		k := keysFor("p", key)
		tag := escapeTag(key)
		if strings.ContainsAny(tag, "{}") {
			t.Fatalf("escapeTag(%q) = %q contains a brace", key, tag)
		}
		if k.record != "p:{"+tag+"}" || k.channel() != "p:{"+tag+"}:chan" {
			t.Fatalf("keysFor(%q) = %+v", key, k)
		}
		fenceTag := strings.TrimSuffix(strings.TrimPrefix(k.fence(), "p:fence:{"), "}")
		if k.slot != keySlot(tag) {
			t.Fatalf("keysFor(%q).slot = %d, want %d", key, k.slot, keySlot(tag))
		}
		if keySlot(fenceTag) != keySlot(tag) {
			t.Fatalf("keysFor(%q): fence %q in slot %d, record in slot %d", key, k.fence(), keySlot(fenceTag), keySlot(tag))
		}
	}
	// Escaping is injective on the characters it touches.
	seen := map[string]string{}
	for _, key := range []string{"{", "%7B", "%257B", "}", "%7D", "%", "%25"} {
		if other, dup := seen[escapeTag(key)]; dup {
			t.Fatalf("escapeTag(%q) == escapeTag(%q)", key, other)
		}
		seen[escapeTag(key)] = key
	}
}

// TestScriptsDeriveTheChannel checks that the scripts publish where
// WaitChange subscribes.
func TestScriptsDeriveTheChannel(t *testing.T) {
	if !strings.Contains(luaNotify("m"), "KEYS[1] .. '"+channelSuffix+"'") {
		t.Fatalf("the scripts' channel is not the record name plus %q", channelSuffix)
	}
}
