package spec

// The time zone database is compiled in, so that a schedule's timezone
// validates the same on every machine, whatever it has installed.
import _ "time/tzdata"
