package store

import "hash/maphash"

// idFilter is a Bloom filter of external ids: mayHold is true for every id
// added, and for about 2% of the others once a million are in (more as it
// fills: at ten million it holds nearly everything, which costs lookups,
// never a wrong answer). A load into an empty table keeps the ids it wrote
// in one, so that the ids of a new batch are looked up only when an earlier
// batch may have written them. 1 MiB, whatever the number of ids.
type idFilter struct {
	seed maphash.Seed
	bits []uint64
}

// idFilterBits is the filter's size in bits (a power of two) and
// idFilterHashes how many bits an id sets.
const (
	idFilterBits   = 1 << 23
	idFilterHashes = 4
)

func newIDFilter() *idFilter {
	return &idFilter{seed: maphash.MakeSeed(), bits: make([]uint64, idFilterBits/64)}
}

// positions calls fn with the id's bit positions (double hashing).
func (f *idFilter) positions(id string, fn func(bit uint64) bool) bool {
	h := maphash.String(f.seed, id)
	h1, h2 := h, h>>32|h<<32|1
	for i := range uint64(idFilterHashes) {
		if !fn((h1 + i*h2) & (idFilterBits - 1)) {
			return false
		}
	}
	return true
}

// add puts id in the filter.
func (f *idFilter) add(id string) {
	f.positions(id, func(bit uint64) bool { f.bits[bit/64] |= 1 << (bit % 64); return true })
}

// mayHold reports whether id may have been added (always true if it was).
func (f *idFilter) mayHold(id string) bool {
	return f.positions(id, func(bit uint64) bool { return f.bits[bit/64]&(1<<(bit%64)) != 0 })
}
