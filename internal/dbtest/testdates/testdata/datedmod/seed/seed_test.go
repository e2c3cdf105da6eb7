package seed_test

import (
	"testing"

	"example.com/datedmod/seed"
	"example.com/datedmod/store"
)

func TestFill(t *testing.T) { _ = seed.Fill(store.Store{}) }

func TestMode(t *testing.T) { _ = seed.Mode("seed") }

func TestLive(t *testing.T) { t.Run("sub", func(t *testing.T) { _ = seed.Live() }) }

func TestBackdated(t *testing.T) { _ = store.Store{}.Backdate() }
