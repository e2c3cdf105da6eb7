package spec

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// cronFields names the fields of a 5-field cron line, with what each accepts.
var cronFields = []struct {
	name, accepts string
	names         []string
}{
	{"minute", "0-59", nil},
	{"hour", "0-23", nil},
	{"day of month", "1-31", nil},
	{"month", "1-12 or JAN-DEC", []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}},
	{"day of week", "0-6 (0 is Sunday) or SUN-SAT", []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}},
}

// cronDescriptors are the @ forms the parser accepts.
var cronDescriptors = []string{"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly", "@every"}

// cronIntRE reads the parser's message about a value that is not a number.
var cronIntRE = regexp.MustCompile(`failed to parse int from ([^:\s]+)`)

// explainCron words why a cron line does not parse, naming the field at
// fault and what it accepts, instead of the parser's internals (strconv.Atoi:
// parsing "FRY").
func explainCron(line string, err error) string {
	if strings.HasPrefix(line, "@") {
		word, _, _ := strings.Cut(line, " ")
		if word == "@every" {
			return fmt.Sprintf("invalid cron line %q: @every takes a duration such as @every 1h30m", line)
		}
		hint := "; expected one of " + strings.Join(cronDescriptors, ", ")
		if s, ok := suggest(word, cronDescriptors); ok {
			hint = fmt.Sprintf("; did you mean %s?", s)
		}
		return fmt.Sprintf("invalid cron line %q: unknown descriptor %s%s", line, word, hint)
	}
	fields := strings.Fields(line)
	if len(fields) != len(cronFields) {
		return fmt.Sprintf("invalid cron line %q: expected 5 fields (minute hour day-of-month month day-of-week), found %d; wf has no seconds field", line, len(fields))
	}
	parser := cronParser()
	for i, f := range fields {
		probe := []string{"*", "*", "*", "*", "*"}
		probe[i] = f
		_, ferr := parser.Parse(strings.Join(probe, " "))
		if ferr == nil {
			continue
		}
		field := cronFields[i]
		reason := ferr.Error()
		if m := cronIntRE.FindStringSubmatch(reason); m != nil {
			reason = fmt.Sprintf("%s is not a number", m[1])
			if field.names != nil {
				reason = fmt.Sprintf("%s is not a number or a name", m[1])
				if s, ok := suggest(strings.ToUpper(m[1]), field.names); ok {
					reason += fmt.Sprintf("; did you mean %s?", s)
				}
			}
		}
		return fmt.Sprintf("invalid cron line %q: field %d (%s) %q: %s; it accepts %s, lists (1,3), ranges (1-5) and steps (*/15)", line, i+1, field.name, f, reason, field.accepts)
	}
	return fmt.Sprintf("invalid cron line %q: %v", line, err)
}

// cronNeverFiresFrom is where a cron line is searched for a tick. The parser
// looks five years ahead, which finds the 29th of February (a leap year is
// at most eight years away only around 2100), so a line with no tick from
// here names a date that does not exist. A fixed start keeps the answer
// independent of the day wf validate runs.
var cronNeverFiresFrom = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// neverFires reports whether a parsed cron line names no existing date, such
// as the 30th of February or the 31st of April.
func neverFires(s interface{ Next(time.Time) time.Time }) bool {
	return s.Next(cronNeverFiresFrom).IsZero()
}
