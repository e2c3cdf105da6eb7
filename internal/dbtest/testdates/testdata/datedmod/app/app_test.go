package app

import "testing"

func TestCommands(t *testing.T) {
	for _, c := range Commands() {
		_ = c.Name
	}
}

const backdated = `UPDATE tasks.tasks SET finished_at = now() - interval '1 day'`

func TestRawSQL(t *testing.T) { _ = backdated }

func TestEnsures(t *testing.T) {
	var p partitions
	p.EnsurePartitions()
}

type partitions struct{}

func (partitions) EnsurePartitions() {}
