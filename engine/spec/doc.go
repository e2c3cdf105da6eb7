// Package spec loads, validates and compiles wf's YAML specs (TaskType,
// Subscription, Schedule and Runner documents) into one immutable Set that the
// engine runs from.
//
// Loading happens in two passes. The first checks every document against the
// JSON Schemas of package schemas (the same files editors use). The second
// checks what a schema cannot: expressions compile against the environment
// they see at run time, cron lines, time zones and durations parse and are in
// bounds, names are unique, references resolve, schedule inputs fit their task
// type's inputs schema, and every runner can be reached. Every problem is
// reported, each with the file, line and column of the YAML node at fault.
//
// Nothing reads YAML after Compile returns: the Set holds compiled expression
// programs, compiled JSON Schemas, parsed cron schedules and time zones, the
// capability map and the subscription and schedule tables. A Set is safe for
// concurrent use.
package spec
