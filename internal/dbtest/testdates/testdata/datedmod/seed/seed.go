// Package seed calls the dated writer through a helper and a switch.
package seed

import "example.com/datedmod/store"

// Fill seeds through the store.
func Fill(s store.Store) int { return helper(s) }

func helper(s store.Store) int { return s.Seed(3) }

// Mode runs one mode by name.
func Mode(name string) int {
	switch name {
	case "seed":
		return Fill(store.Store{})
	}
	return 0
}

// Live only enqueues.
func Live() int { return store.Store{}.Enqueue(1) }
