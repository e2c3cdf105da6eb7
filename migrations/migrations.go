// Package migrations embeds wf's numbered SQL migrations. They are applied by
// `wf migrate up` and by `wf run` at start (see internal/dbmigrate).
package migrations

import "embed"

// FS holds the migration files, named NNN_description.sql.
//
//go:embed *.sql
var FS embed.FS
