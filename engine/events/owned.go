package events

import (
	"slices"
	"strings"
)

// ownedFamilies are the event type families wf itself emits: the registry's
// lifecycle (catalog.*, collection.*), the queue's (task.*), the catalog
// application's (ingestion.*, export.*, asset.*, storage.* from the
// Cloud Storage notifications /hooks/gcs receives), the workflow engine's
// (workflow.completed, workflow.failed, workflow.cancelled) and the
// platform's (schedule.*, webhook.*). Subscriptions act on them (drops,
// webhook fan-out, what follows a run), so only wf writes them; clients of
// the HTTP API emit any other type. This is the one place they are declared.
var ownedFamilies = []string{"asset", "catalog", "collection", "export", "ingestion", "schedule", "storage", "task", "webhook", "workflow"}

// Owned reports whether an event type is one wf emits itself (see
// OwnedFamilies), which clients may not emit.
func Owned(eventType string) bool {
	family, _, _ := strings.Cut(eventType, ".")
	return slices.Contains(ownedFamilies, family)
}

// OwnedFamilies lists the event type families wf owns ("catalog" for
// catalog.*), for messages and documentation.
func OwnedFamilies() []string { return slices.Clone(ownedFamilies) }
