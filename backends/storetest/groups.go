package storetest

import "slices"

// Group is a family of cases, named for what a failure means.
type Group string

// The groups of the suite, in the order Run runs them. A new group is one
// more entry of groups: a file that declares its cases (admin cases, say)
// and one line here.
const (
	// Safety cases fail when the store can let a side effect run twice, a
	// stale holder's write win, or a request be answered with another's
	// response. No deviation from them may be declared.
	Safety Group = "safety"
	// Contract cases pin down the rest of the idem.Store contract: what a
	// fresh lease looks like, that responses round-trip byte for byte,
	// that a cancelled context changes nothing, that a lease that expired
	// but was not taken over is still its holder's. A store may be stricter
	// than the contract and still safe; it declares that as a deviation.
	Contract Group = "contract"
	// Liveness cases fail when a key can stay unusable: a released, expired
	// or retained key that does not become free in time, a waiter that is
	// not woken, a sweeper that removes nothing.
	Liveness Group = "liveness"
)

// groups lists every group with its cases, in the order Run runs them.
var groups = []struct {
	group Group
	cases func() []groupCase
}{
	{Safety, safetyCases},
	{Contract, contractCases},
	{Liveness, livenessCases},
	{Uncertain, uncertainCases},
	{Policy, policyCases},
}

func safetyCases() []groupCase {
	return []groupCase{
		{"AcquireOnLiveLeaseReturnsRecord", acquireLive},
		{"CompleteStoresResponseForReplay", completeReplay},
		{"FailStoresResponseForReplay", failReplay},
		{"ConcurrentAcquireGrantsExactlyOneLease", raceOneWinner},
		{"ConcurrentTakeOverGrantsExactlyOneLease", raceOneTakeOver},
		{"StaleTokenWritesAreFencedOff", staleTokenFenced},
		{"WritesAfterCompletionAreFencedOff", fencedAfterCompletion},
		{"TokensIncreaseAcrossReleaseAndRetention", tokensIncrease},
		{"HeartbeatExtendsLease", heartbeatExtends},
		{"TakeOverRefusedForDifferentFingerprint", takeOverOtherFingerprint},
		{"FingerprintKeptWithRecord", fingerprintKept},
		{"KeysAreExactAndIndependent", keysIndependent},
		{"CorruptRecordIsReported", corruptRecord},
		{"PlantedRecordsFailClosed", plantedRecords},
		{"BatchPathAgreesWithSinglePath", batchAgreesWithSingle},
	}
}

func contractCases() []groupCase {
	return []groupCase{
		{"AcquireOnAbsentKeyGrantsLease", acquireAbsent},
		{"ExpiredLeaseNotTakenOverIsStillOwned", expiredStillOwned},
		{"ResponsesRoundTripByteForByte", responseRoundTrip},
		{"CancelledContextChangesNothing", cancelledContext},
	}
}

func livenessCases() []groupCase {
	return []groupCase{
		{"ReleaseMakesKeyAbsentAndRetryable", releaseAbsent},
		{"TakeOverOnlyAfterExpiryWithHigherToken", takeOverAfterExpiry},
		{"ReadsDoNotExtendLease", readsDoNotExtend},
		{"RetentionExpiryForgetsRecord", retentionExpiry},
		{"WaiterWakesOnCompletion", waiterWakes},
		{"SweeperRemovesOnlyExpiredRecords", sweeperRemoves},
	}
}

// Case names one case of the suite and its group.
type Case struct {
	Name  string
	Group Group
}

// Cases returns every case of the suite in the order Run runs them. The
// slice is the caller's.
func Cases() []Case {
	var all []Case
	for _, g := range groups {
		for _, c := range g.cases() {
			all = append(all, Case{Name: c.name, Group: g.group})
		}
	}
	return all
}

// groupOf returns the group of the case called name, and whether there is
// one.
func groupOf(name string) (Group, bool) {
	i := slices.IndexFunc(Cases(), func(c Case) bool { return c.Name == name })
	if i < 0 {
		return "", false
	}
	return Cases()[i].Group, true
}
